"""vLLM's package laid out as its RFC #54653 (draft PR #54654) proposes: ``vllm/entrypoints`` moved
to ``vllm/frontend/entrypoints``, vLLM's own imports rewritten to the new paths, and a shim left at
every old path, as the PR's generator writes them: a module becomes the moved one
(``sys.modules[__name__] = importlib.import_module(new_name)``, so the old and the new name are the
same module object), a package delegates its attributes to the moved package lazily.

``build(source, destination)`` makes that tree from an installed vLLM (``source``: the folder
holding its ``vllm/``); put the returned folder first on ``sys.path`` (or PYTHONPATH) of a fresh
process. Python files are rewritten copies; every other file (compiled extensions, templates) a
symbolic link to the installed one.
"""

from __future__ import annotations

import os
import pathlib
import re

OLD = "vllm.entrypoints"
NEW = "vllm.frontend.entrypoints"
_OLD_NAME = re.compile(r"\bvllm\.entrypoints\b")
# A relative import: its dots and the name after them.
_RELATIVE_IMPORT = re.compile(r"^(\s*from\s+)(\.+)([\w.]*)(\s+import\b)", re.M)

_MODULE_SHIM = """\
# Moved to {new} (vLLM RFC #54653): this name is that module.
import importlib
import sys

sys.modules[__name__] = importlib.import_module("{new}")
"""
_PACKAGE_SHIM = """\
# Moved to {new} (vLLM RFC #54653): attributes delegated to it when first asked for.
import importlib


def __getattr__(name):
    return getattr(importlib.import_module("{new}"), name)
"""


def _module_name(relative: pathlib.PurePath) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute_imports_out_of_entrypoints(text: str, relative: pathlib.PurePath) -> str:
    """A moved file's relative imports that climb out of vllm/entrypoints (``from ...tasks`` in
    vllm/entrypoints/pooling/typing.py) made absolute, as the PR rewrites vLLM's imports: after
    the move their dots would reach vllm.frontend instead of vllm."""
    package = _module_name(relative).split(".")
    if relative.name != "__init__.py":
        package = package[:-1]
    inside = len(package) - 2  # the dots that stay inside vllm/entrypoints

    def absolute(match):
        start, dots, name, end = match.groups()
        if len(dots) <= inside:
            return match.group(0)
        base = ".".join(package[: len(package) - (len(dots) - 1)])
        return f"{start}{base}{'.' + name if name else ''}{end}"

    return _RELATIVE_IMPORT.sub(absolute, text)


def build(source: pathlib.Path, destination: pathlib.Path) -> pathlib.Path:
    """The moved copy of ``source/vllm`` under ``destination``; returns ``destination``."""
    package = source / "vllm"
    if not (package / "entrypoints").is_dir():
        raise LookupError(f"{package} has no entrypoints package to move")
    for folder, directories, files in os.walk(package):
        directories[:] = [d for d in directories if d != "__pycache__"]
        here = pathlib.Path(folder)
        for name in files:
            path = here / name
            relative = path.relative_to(source)
            moved = relative.parts[:2] == ("vllm", "entrypoints")
            target = destination / (pathlib.PurePath("vllm", "frontend", *relative.parts[1:]) if moved else relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".py"):
                text = path.read_text(encoding="utf-8")
                if moved:
                    text = _absolute_imports_out_of_entrypoints(text, relative)
                target.write_text(_OLD_NAME.sub(NEW, text), encoding="utf-8")
                if moved:  # the shim at the old path
                    old = destination / relative
                    old.parent.mkdir(parents=True, exist_ok=True)
                    new_name = NEW + _module_name(relative)[len(OLD):]
                    shim = _PACKAGE_SHIM if name == "__init__.py" else _MODULE_SHIM
                    old.write_text(shim.format(new=new_name), encoding="utf-8")
            elif not name.endswith((".pyc", ".pyo")):
                target.symlink_to(path.resolve())
    (destination / "vllm" / "frontend" / "__init__.py").write_text("")
    return destination
