"""The layout holds what docs/architecture.md says of it: no file of the Python layer decides a
tensor's device but the CUDA room (and the bench, which measures those paths itself); no test but
the bench's own imports the shipped bench; no source or test file over 1,000 lines (Python, and
the C++ of cpp/ and bindings/ but generated tables); the map names
every room and the docs pages quote no commit. (The import layers between the rooms are held by
import-linter in the lint stage: pyproject.toml's [tool.importlinter].)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_source_tree  # src/, tests/, docs/

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "tensorb64"
ROOMS = ("_codec", "_cuda", "_hosts", "_ingest", "_bench")


def python_files(folder: Path):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


# What names a device or asks a tensor where it is: as an attribute (t.is_cuda, t.cpu()), or as a
# string in a call or a comparison (getattr(t, "is_cuda"), t.device.type == "cuda",
# t.device.type in ("cuda",), t.to("cpu")).
DEVICE_ATTRIBUTES = {"is_cuda", "is_cpu", "is_mps", "is_xpu", "cpu", "cuda"}
DEVICE_NAMES = {"cuda", "cpu", "mps", "xpu"} | DEVICE_ATTRIBUTES


def device_tests(source: str, name: str = "<source>") -> list:
    """Where code looks at a tensor's device: an attribute of DEVICE_ATTRIBUTES, or a device (or
    such an attribute's name) named by a string anywhere in a call's arguments or a comparison's
    operands (inside tuples, lists and sets too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in DEVICE_ATTRIBUTES:
            found.append(f"{name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, (ast.Call, ast.Compare)):
            operands = ([*node.args, *(k.value for k in node.keywords)] if isinstance(node, ast.Call)
                        else [node.left, *node.comparators])
            if any(isinstance(inner, ast.Constant) and inner.value in DEVICE_NAMES
                   for operand in operands for inner in ast.walk(operand)):
                found.append(f"{name}:{node.lineno}: a device named")
    return found


def file_device_tests(path: Path) -> list:
    return device_tests(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


@pytest.mark.parametrize("form", ["t.is_cuda", "t.cpu()", "t.cuda(1)", "getattr(t, 'is_cuda')", "getattr(t, 'is_cpu', False)",
                                  "t.device.type == 'cuda'", "t.device.type in ('cuda',)", "'cpu' != t.device.type",
                                  "t.device.type in {'cuda', 'mps'}", "t.to('cpu')", "t.to(device='cpu')",
                                  "torch.device('cuda', 0)", "t.is_mps"])
def test_the_device_scan_sees_every_form(form):
    assert device_tests(f"x = {form}\n"), form
    assert device_tests(f"if {form}:\n    pass\n"), form


def test_only_the_cuda_room_decides_a_device():
    outside = [p for p in python_files(PACKAGE) if p.parent.name not in ("_cuda", "_bench")]
    assert outside and [found for p in outside for found in file_device_tests(p)] == []
    assert file_device_tests(PACKAGE / "_cuda" / "route.py")  # (the check sees a device test where there is one)


def test_no_test_takes_what_it_needs_from_the_shipped_bench():
    bench_tests = {ROOT / "tests" / "test_bench_cli.py", Path(__file__).resolve()}  # the bench's own tests, and this
    importers = []
    for path in python_files(ROOT / "tests"):
        text = path.read_text(encoding="utf-8")
        if path not in bench_tests and re.search(r"tensorb64\._bench|from tensorb64 import _bench", text):
            importers.append(str(path.relative_to(ROOT)))
    assert importers == []


# Tables written by a generator (cpp/tools/gen_*_pow10.py), kept as it writes them: not read as code.
GENERATED = {"pow10.hpp", "number_parser_pow10.hpp"}


def cxx_files(folder: Path):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".cpp", ".hpp", ".h", ".c", ".cc")
                  and p.name not in GENERATED and "build" not in p.relative_to(ROOT).parts)


def test_no_source_or_test_file_over_1000_lines():
    files = (python_files(PACKAGE) + python_files(ROOT / "tests") + python_files(ROOT / "benchmarks")
             + cxx_files(ROOT / "cpp") + cxx_files(ROOT / "bindings"))
    assert len(cxx_files(ROOT / "cpp")) > 50 and cxx_files(ROOT / "bindings")  # (the C++ sources are seen)
    long = [f"{p.relative_to(ROOT)}: {n}" for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) > 1000]
    assert long == []


def test_the_map_names_every_room_and_the_docs_quote_no_commit():
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rooms = [p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert set(ROOMS) == set(rooms), rooms
    for name in [*rooms, "ci/", "benchmarks/", "tests/support", "The input path"]:
        assert name in architecture, name
    for host in (PACKAGE / "_hosts").glob("*.py"):
        assert host.stem == "__init__" or f"`{host.stem}`" in architecture or f"`{host.name}`" in architecture, host.stem
    quoted = [f"{page.name}: {hit}" for page in (ROOT / "docs").glob("*.md")
              for hit in re.findall(r"`[0-9a-f]{7,40}\^?`|\bcommit [0-9a-f]{7,40}\b", page.read_text(encoding="utf-8"))]
    assert quoted == []
