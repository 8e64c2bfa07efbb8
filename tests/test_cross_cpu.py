"""The core on CPUs other than this one: the C++ tests cross-compiled for big-endian s390x and for
aarch64 (the NEON kernel) under qemu-user, natively (every x86 level against scalar), and the
installed package under qemu-x86_64 emulating a CPU without AVX (it must pick scalar, not crash)
and one with AVX2 only (it must pick avx2).

All marked `slow` (select them with `-m slow`). Each is skipped, saying why, only when the
compiler or qemu it needs is absent; `.ci/run` installs them (qemu-user, g++-s390x-linux-gnu,
g++-aarch64-linux-gnu).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.needs_source_tree]

RUN_CROSS = Path(__file__).resolve().parent.parent / "cpp" / "tests" / "run_cross.sh"
TOOLS = {
    "native": ["g++"],
    "s390x": ["s390x-linux-gnu-g++", "qemu-s390x"],
    "aarch64": ["aarch64-linux-gnu-g++", "qemu-aarch64"],
    "westmere": ["g++", "qemu-x86_64"],
}
IS_X86_64_LINUX = sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")


def _require(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install qemu-user g++-s390x-linux-gnu "
                    "g++-aarch64-linux-gnu)")


@pytest.mark.parametrize("arch", ["native", "s390x", "aarch64", "westmere"])
def test_core_tests_cross(arch):
    if not RUN_CROSS.exists():
        pytest.skip("cpp/tests/run_cross.sh is not here (running from an installed wheel without the sources)")
    if sys.platform != "linux":
        pytest.skip("run_cross.sh builds static Linux binaries")
    _require("bash", "cmake", *TOOLS[arch])  # run_cross.sh builds through cpp/CMakeLists.txt
    args = ["bash", str(RUN_CROSS), arch]
    if arch != "native":
        args.append("--quick")  # under emulation: misalignments 0..7 and sampled lengths only
    result = subprocess.run(args, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    last = [line for line in result.stdout.splitlines() if line.startswith("core_tests:")][-1]
    assert last.endswith(" passed, 0 failed"), output[-6000:]
    if arch == "aarch64":
        assert "levels available: scalar neon" in result.stdout  # the NEON kernel really ran
    if arch == "westmere":
        assert "levels available: scalar;" in result.stdout  # no AVX: scalar only, and it ran
    if arch == "westmere" and not IS_X86_64_LINUX:
        pytest.skip("qemu-x86_64 runs x86-64 programs only")
    if arch == "native" and IS_X86_64_LINUX:
        assert "encodings compared with scalar" in result.stdout or "only the scalar level" in result.stdout


PROBE = """
import json, tensorb64
print(json.dumps({
    "level": tensorb64.simd_level(),
    "available": tensorb64.available_simd_levels(),
    "one": tensorb64.encode([1.0]),
    "rows": tensorb64.encode_rows([[1.0, 2.0], [-0.0, 3.14159265]]),
    "thousand_doubles": tensorb64.encode([float(i) / 7 for i in range(1000)]),
}))
"""


def _run_installed_under(cpu: str) -> dict:
    import json

    _require("qemu-x86_64")
    env = dict(os.environ)
    env.pop("TENSORB64_SIMD", None)
    # numpy's bundled OpenBLAS takes qemu's Westmere for a Haswell and runs AVX2 code at import
    # (SIGILL before tensorb64 is loaded); a real Westmere is detected as Nehalem, which this names.
    # It only picks numpy's BLAS kernels, which the probe does not use.
    env["OPENBLAS_CORETYPE"] = "Nehalem"
    # Outside the source tree, so the installed package is what is imported.
    result = subprocess.run(
        ["qemu-x86_64", "-cpu", cpu, sys.executable, "-c", PROBE],
        capture_output=True, text=True, timeout=600, env=env, cwd=os.path.expanduser("~") or "/",
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _expected_thousand_doubles() -> str:
    import base64
    import struct

    values = [float(i) / 7 for i in range(1000)]
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


@pytest.mark.skipif(not IS_X86_64_LINUX, reason="qemu-x86_64 user mode runs x86-64 Linux programs only")
def test_installed_package_on_cpu_without_avx():
    probe = _run_installed_under("Westmere")
    assert probe["level"] == "scalar"
    assert probe["available"] == ["scalar"]
    assert probe["one"] == "AACAPw=="
    assert probe["rows"] == ["AACAPwAAAEA=", "AAAAgNsPSUA="]
    assert probe["thousand_doubles"] == _expected_thousand_doubles()


@pytest.mark.skipif(not IS_X86_64_LINUX, reason="qemu-x86_64 user mode runs x86-64 Linux programs only")
def test_installed_package_on_avx2_cpu():
    probe = _run_installed_under("Haswell")
    assert probe["level"] == "avx2"
    assert probe["available"] == ["scalar", "avx2"]
    assert probe["one"] == "AACAPw=="
    assert probe["rows"] == ["AACAPwAAAEA=", "AAAAgNsPSUA="]
    assert probe["thousand_doubles"] == _expected_thousand_doubles()
