"""pytest plugin (loaded by tests/conftest.py): a test marked `long` is also marked `e2e` or `slow`.

`long` leaves a test out of CI's gate (`make test`); `make test-fast` leaves out only `e2e` and `slow`, so a `long`
test without one of them would run in the quick check while editing (docs/testing.md). The check reads pytest's own
view of each test's markers (its module's, its class's, its parameter's) as the tests are collected, before any
`-m` deselects them: a misfiled test is a collection error of its file in every run that collects it, the gate's
included.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

TIERS = ("e2e", "slow")  # the markers a `long` test needs one of


def misfiled(item: pytest.Item) -> bool:
    """Whether the test is marked `long` but neither `e2e` nor `slow`."""
    return item.get_closest_marker("long") is not None and not any(item.get_closest_marker(tier) for tier in TIERS)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A collected module's or class's report fails, naming the tests marked `long` alone."""
    report = yield
    wrong = [node.name for node in report.result if isinstance(node, pytest.Item) and misfiled(node)]
    if wrong:
        report.outcome = "failed"
        report.longrepr = f"marked long but neither {' nor '.join(TIERS)} (docs/testing.md): {', '.join(wrong)}"
        report.result = []
    return report
