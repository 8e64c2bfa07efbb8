"""Running code right after a module is imported: ``after_import(name, callback)``.

tensorb64 never imports torch, vLLM or Dynamo, but must act on them once they are loaded (torch's
tensor type registered with the reader, vLLM's and Dynamo's response builders replaced). A
callback runs at once where the module is already imported; otherwise one finder at the front of
``sys.meta_path`` hands the import the spec the other finders give, its loader wrapped so that the
callbacks run right after the module's code, once. An import that fails runs none of them (they
wait for the next import of that name that succeeds).

A callback runs inside the host's import (``import torch``, vLLM's serving module): whatever it
raises is logged (one line per callback and module) and goes no further, so the import succeeds
with the module as its own code made it, and the other callbacks for that module still run.

The registry is guarded by a lock (free-threaded builds run registrations and imports truly in
parallel); callbacks run outside it. One race is left open: an import that another thread had
already started (its spec found) when the first callback for that name was registered runs
without the wrapper, so that callback runs at the next import, not this one.
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType

_lock = threading.Lock()
_pending: dict[str, list[Callable[[ModuleType], object]]] = {}
_logger = logging.getLogger("tensorb64")


def after_import(name: str, callback: Callable[[ModuleType], object]) -> None:
    """Run ``callback(module)`` now if module ``name`` is imported, else once, right after its
    import has run its code (callbacks for one name run in the order they were registered)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None or name in _pending:  # (in _pending while its import runs: after it)
            _pending.setdefault(name, []).append(callback)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    _run(callback, name, module)


def _run(callback: Callable[[ModuleType], object], name: str, module: ModuleType) -> None:
    try:
        callback(module)
    except Exception:  # ours: never the importer's (the module stays as its own code made it)
        _logger.exception("tensorb64: a callback after importing %s failed; the module is left as it is", name)


def _run_pending(name: str, module: ModuleType) -> None:
    with _lock:
        callbacks = _pending.pop(name, [])
        if not _pending and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
    for callback in callbacks:
        _run(callback, name, module)


class _AfterImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a name with callbacks waiting, the spec of the finders after it,
    with its loader wrapped."""

    def find_spec(self, name, path=None, target=None):
        with _lock:
            if name not in _pending:
                return None
        finders = list(sys.meta_path)
        after = finders[finders.index(self) + 1 :] if self in finders else finders
        for finder in after:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(name, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CallbackLoader(spec.loader, name)
                return spec
        return None


class _CallbackLoader(importlib.abc.Loader):
    """The module's own loader, then the callbacks. The module keeps its own loader as
    ``__loader__`` and ``__spec__.loader`` (for tools that read them: inspect, importlib.resources)."""

    def __init__(self, loader, name: str):
        self.loader = loader
        self.name = name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _run_pending(self.name, sys.modules.get(self.name, module))

    def __getattr__(self, name):  # get_source, get_filename, ... of the module's own loader
        return getattr(self.loader, name)


_finder = _AfterImportFinder()
