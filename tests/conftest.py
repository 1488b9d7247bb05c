"""Hooks for every test run: a test marked `long` is also `e2e` or `slow` (tests/long_markers.py); the fixtures the
test folders share (tests/shared_fixtures.py)."""

from long_markers import pytest_make_collect_report  # noqa: F401 (a hook: pytest finds it by its name here)

pytest_plugins = ["shared_fixtures"]
