"""Find a model file inside an installed PyPI distribution without importing the package."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

from medical_team.errors import UserInputError
from medical_team.models.registry import PackagedFile


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(8 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def installed_distribution(source: PackagedFile) -> importlib.metadata.Distribution:
    """The installed distribution at the pinned version; `UserInputError` with the install command otherwise."""
    try:
        distribution = importlib.metadata.distribution(source.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise UserInputError(
            f"the package {source.distribution}=={source.version} that ships this model is not installed "
            f"(`make env` installs it); install it with: {source.pip_install}"
        ) from None
    if distribution.version != source.version:
        raise UserInputError(
            f"{source.distribution} {distribution.version} is installed, but this model is pinned to "
            f"{source.version}; install it with: {source.pip_install}"
        )
    return distribution


def locate(source: PackagedFile) -> Path:
    """The packaged file's path, after checking the distribution's version and the file's digest."""
    distribution = installed_distribution(source)
    path = Path(str(distribution.locate_file(source.path)))
    if not path.is_file():
        raise UserInputError(
            f"{source.distribution} {source.version} is installed but has no {source.path}; reinstall it with: "
            f"{source.pip_install} --force-reinstall",
            file=str(path),
        )
    digest = sha256_of(path)
    if digest != source.sha256:
        raise UserInputError(
            f"SHA-256 {digest} differs from the pinned {source.sha256}; reinstall with: "
            f"{source.pip_install} --force-reinstall",
            file=str(path),
        )
    return path


def licence_text(source: PackagedFile) -> str | None:
    """The distribution's licence file (its `License-File`), or None when it ships none."""
    distribution = installed_distribution(source)
    for name in distribution.metadata.get_all("License-File") or []:
        for file in distribution.files or []:
            if file.name == name and file.parent.name.endswith(".dist-info"):
                return Path(str(distribution.locate_file(file))).read_text(encoding="utf-8")
    return None
