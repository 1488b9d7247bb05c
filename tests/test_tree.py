"""The tests mirror the package: one test folder per package of medical_team/, named as it, and no other folder
but the whole-product runs (e2e/), the container's runtime and image (container/: entrypoints/ and docker/) and the
bad-input corpus."""

from __future__ import annotations

from pathlib import Path

import medical_team

TESTS = Path(__file__).resolve().parent
PACKAGE = Path(medical_team.__file__).resolve().parent
# Test folders that mirror no package: what they test spans the product or lies outside medical_team/.
BEYOND_THE_PACKAGE = {
    "e2e": "real `medplay train` runs on CPU, every process of the product at once",
    "container": "the container: its runtime (entrypoints/) and its image (Dockerfile, docker/)",
    "corpus": "bad inputs, read by the tests of the code that refuses them",
}


def _folders(root: Path) -> set[str]:
    return {path.name for path in root.iterdir() if path.is_dir() and path.name != "__pycache__"}


def test_each_package_has_its_test_folder_and_each_test_folder_its_package() -> None:
    packages = {name for name in _folders(PACKAGE) if (PACKAGE / name / "__init__.py").exists()}
    assert _folders(TESTS) - set(BEYOND_THE_PACKAGE) == packages

