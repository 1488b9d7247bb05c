"""Find a model file inside an installed PyPI distribution without importing the package."""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.models.registry import PackagedFile


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(8 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def installed_distribution(source: PackagedFile, name: str | None = None) -> importlib.metadata.Distribution:
    """The installed distribution (the source's, or its chunk package `name`) at the pinned version, else an error."""
    name = name or source.distribution
    try:
        distribution = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise UserInputError(
            f"the package {name}=={source.version} that ships this model is not installed "
            f"(`make env` installs it); install it with: {source.pip_install}"
        ) from None
    if distribution.version != source.version:
        raise UserInputError(
            f"{name} {distribution.version} is installed, but this model is pinned to "
            f"{source.version}; install it with: {source.pip_install}"
        )
    return distribution


def _installed_file(source: PackagedFile, name: str, relative: str) -> Path:
    """A file of an installed distribution; `UserInputError` with the reinstall command if it is missing."""
    path = Path(str(installed_distribution(source, name).locate_file(relative)))
    if not path.is_file():
        raise UserInputError(
            f"{name} {source.version} is installed but has no {relative}; reinstall it with: "
            f"{source.pip_install} --force-reinstall",
            file=str(path),
        )
    return path


def locate(source: PackagedFile, scratch: Path | None = None) -> Path:
    """The packaged file's path after checking versions and digest; a chunked file is joined into `scratch` first."""
    if source.chunks:
        installed_distribution(source)
        if scratch is None:
            raise ValueError(f"{source.path} ships in chunks: locate() needs a scratch folder to join them in")
        scratch.mkdir(parents=True, exist_ok=True)
        path = scratch / source.path
        with path.open("wb") as joined:
            for chunk in source.chunks:
                with _installed_file(source, chunk.distribution, chunk.path).open("rb") as piece:
                    shutil.copyfileobj(piece, joined, 8 << 20)
    else:
        path = _installed_file(source, source.distribution, source.path)
    digest = sha256_of(path)
    if digest != source.sha256:
        raise UserInputError(
            f"SHA-256 {digest} differs from the pinned {source.sha256}; reinstall with: "
            f"{source.pip_install} --force-reinstall",
            file=str(path),
        )
    return path


def licence_file(source: PackagedFile) -> Path | None:
    """The distribution's licence file (the pinned one, else its `License-File`), or None when it ships none."""
    if source.licence_file is not None:
        return _installed_file(source, source.distribution, source.licence_file)
    distribution = installed_distribution(source)
    for name in distribution.metadata.get_all("License-File") or []:
        for file in distribution.files or []:
            if file.name == name and file.parent.name.endswith(".dist-info"):
                return Path(str(distribution.locate_file(file)))
    return None
