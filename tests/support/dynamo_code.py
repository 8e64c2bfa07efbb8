"""Dynamo's vLLM worker functions, read from ai-dynamo's wheel, for the vLLM plugin's tests.

Dynamo's worker modules cannot be imported here (Dynamo 1.6.1 pins vLLM 0.31, imports its Rust
runtime and torchvision, whose PyPI build does not load with torch 2.13's CPU build), so the
functions the plugin swaps are read from the wheel as written, with the imports they use, into a
module of their own name under a folder put first on sys.path (``installed``), which the plugin
then patches as it would patch Dynamo's.
"""

from __future__ import annotations

import ast
import contextlib
import os
import sys
import zipfile

import pytest

# Each module the plugin patches: its functions that are read, and the imports they use.
MODULES = {
    "dynamo.vllm.handlers": (
        ("_flatten_pooling_tensor", "_pooling_output_to_list", "_encode_floats_to_base64", "_pooling_output_to_base64"),
        "import base64\nimport struct\nfrom typing import Any\n\nimport numpy as np\nimport torch\n",
    ),
    "dynamo.vllm.pooling_handlers": (
        ("_pooling_output_to_nested", "_encode_pooling_output"),
        "import base64\nimport importlib\nfrom typing import Any\n\nimport torch\n",
    ),
}


def wheel() -> str:
    """The path of ai-dynamo's wheel (TENSORB64_DYNAMO_WHEEL, which ci/vllm_check.sh sets); skips
    the test where it is not set."""
    path = os.environ.get("TENSORB64_DYNAMO_WHEEL")
    if not path:
        pytest.skip("TENSORB64_DYNAMO_WHEEL (a path to ai-dynamo's wheel; ci/vllm_check.sh sets it) is not set")
    return path


def source(module: str) -> str:
    """``module``'s functions from the wheel, as written, after the imports they use."""
    names, header = MODULES[module]
    with zipfile.ZipFile(wheel()) as z:
        text = z.read(module.replace(".", "/") + ".py").decode()
    functions = {node.name: ast.get_source_segment(text, node) for node in ast.parse(text).body
                 if isinstance(node, ast.FunctionDef)}
    missing = [name for name in names if name not in functions]
    assert not missing, f"Dynamo's {module} has no {missing}"
    return header + "\n\n" + "\n\n\n".join(functions[name] for name in names) + "\n"


@contextlib.contextmanager
def installed(folder, *modules: str):
    """The modules (as ``source`` reads them) importable under their own names while inside; not
    imported: the caller imports them (after registering the plugin, as Dynamo's worker does)."""
    for module in modules:
        path = folder.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for package in path.relative_to(folder).parents:
            if package.parts:
                (folder / package / "__init__.py").touch()
        path.write_text(source(module), encoding="utf-8")  # (Python reads sources as UTF-8)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == "dynamo" or n.startswith("dynamo.")]:
            del sys.modules[name]
