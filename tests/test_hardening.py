"""Runs the hardening script (cpp/hardening/sanitize.sh --quick): the C++ core tests and edge
tests under AddressSanitizer + UndefinedBehaviorSanitizer, the same under valgrind memcheck, and
20 seconds of each libFuzzer target. About 2-4 minutes on 2 cores, so it is marked slow.

Skipped only when a tool it needs is genuinely absent (named in the skip reason). The full run,
with the Python suite against an ASan build of the extension, is `sanitize.sh --full`.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "cpp" / "hardening" / "sanitize.sh"

pytestmark = [pytest.mark.slow, pytest.mark.needs_source_tree]


def test_sanitize_quick(tmp_path):
    if not SCRIPT.exists():
        pytest.skip("cpp/hardening/sanitize.sh is not in this checkout (installed package only)")
    missing = [tool for tool in ("bash", "cmake", os.environ.get("CXX", "g++"), "clang++", "valgrind") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, not installed")
    env = dict(os.environ, TENSORB64_HARDENING_BUILD=str(tmp_path / "hardening"), PYTHON=sys.executable)
    env.pop("LD_PRELOAD", None)
    env.pop("ASAN_OPTIONS", None)
    proc = subprocess.run(["bash", str(SCRIPT), "--quick"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = proc.stdout[proc.stdout.rfind("==== sanitize.sh summary") :]
    assert proc.returncode == 0, f"sanitize.sh --quick failed:\n{summary}\n--- output tail ---\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    assert "ALL PASSED" in summary and "FAIL " not in summary, summary
