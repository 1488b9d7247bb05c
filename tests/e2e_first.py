"""pytest plugin for `make test` (`-p e2e_first`): the files of end-to-end runs start first on the xdist workers.

xdist's loadfile scheduler hands out whole files, and by default the files with the most tests first: the few-test
end-to-end files, minutes each, then started last and one worker finished them alone while the other sat idle.
Started first (with `--no-loadscope-reorder`), they run beside the many short files instead. The order is the same
on every worker and every run.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked e2e first, each group in its collection order."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)
