"""Fixtures for the data tests: the bundled MEDEC files and a writer of small MEDEC-style CSVs."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from medec_rows import HEADER

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, LoadResult, bundled_csv, load_medec


@pytest.fixture(scope="session")
def validation_result() -> LoadResult:
    """The bundled MEDEC-MS validation file, loaded."""
    return load_medec(bundled_csv(VALIDATION_CSV))


@pytest.fixture(scope="session")
def test_result() -> LoadResult:
    """The bundled MEDEC-MS test file, loaded."""
    return load_medec(bundled_csv(TEST_CSV))


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Write rows under a header to `tmp_path/name` and return the path."""

    def write(
        rows: Sequence[Sequence[str]], name: str = "notes.csv", header: Sequence[str] = HEADER, newline: str = "\n"
    ) -> Path:
        path = tmp_path / name
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator=newline)
            writer.writerow(header)
            writer.writerows(rows)
        return path

    return write
