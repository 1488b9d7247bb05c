"""Run a callback right after a named module is imported, so patches never force heavy imports early."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType

Callback = Callable[[ModuleType], None]

_pending: dict[str, list[Callback]] = {}


class _PatchingLoader(importlib.abc.Loader):
    """Wraps a module's real loader and runs the registered callbacks once the module has executed."""

    def __init__(self, loader: importlib.abc.Loader, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """Delegate module creation to the real loader."""
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        """Execute the module, then apply the callbacks waiting for it."""
        self._loader.exec_module(module)
        for callback in _pending.pop(self._name, []):
            callback(module)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds watched modules through the other finders and swaps in the patching loader."""

    def find_spec(self, fullname, path, target=None):
        """Return the normal spec with a patching loader when `fullname` is watched."""
        if fullname not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, fullname)
                return spec
        return None


_finder = _PatchingFinder()


def when_imported(module_name: str, callback: Callback) -> None:
    """Call `callback(module)` now if `module_name` is loaded, else right after its first import."""
    module = sys.modules.get(module_name)
    if module is not None:
        callback(module)
        return
    _pending.setdefault(module_name, []).append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
