#!/usr/bin/env bash
# Installs a built wheel for an emulated CPU and runs the test suite's fast, in-process tests
# against it under qemu-user:
#
#   ci/test_emulated_wheel.sh aarch64 WHEEL    Debian's arm64 CPython (the wheel's version: 3.11
#                                             or 3.13) under qemu-aarch64 (needs ARM64_SYSROOT
#                                             from ci/arm64_sysroot.sh for that version)
#   ci/test_emulated_wheel.sh westmere WHEEL   this machine's Python under qemu-x86_64 -cpu Westmere
#                                             (an x86-64 without AVX: the scalar kernel)
#
# PYTHON: a host Python with pip (installs numpy's wheel for the target into a folder).
#
# What runs, and why: every module that calls the kernel in-process and needs nothing beyond
# numpy, pytest and hypothesis -- byte parity (float32, decode, RFC 4648, bad inputs, package),
# the guard-page and FP-environment checks -- each at every level the emulated CPU has (aarch64:
# scalar and neon; Westmere: scalar). Left out: the modules whose oracle is torch (no CPU build of
# the pinned torch exists for aarch64 on PyPI, and under emulation importing it alone takes
# minutes); the CLI, server, cross-compiler and sanitizer tests, which start subprocesses or build
# code with the host's tools rather than test this wheel; and the `slow` ones (huge inputs).
set -euo pipefail

kind="${1:?usage: test_emulated_wheel.sh aarch64|westmere WHEEL}"
wheel="$(cd "$(dirname "${2:?usage: test_emulated_wheel.sh aarch64|westmere WHEEL}")" && pwd)/$(basename "$2")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-emulated.XXXXXX")"
trap 'rm -rf "$work"' EXIT

tests=(tests/test_float32_parity.py tests/test_decode.py tests/test_rfc4648.py tests/test_bad_inputs.py
       tests/test_package.py tests/test_guard_page.py tests/test_fp_environment.py)
site="$work/site"
deselect=()
case "$kind" in
  aarch64)
    sysroot="${ARM64_SYSROOT:?ARM64_SYSROOT: the unpacked arm64 CPython (ci/arm64_sysroot.sh)}"
    # The wheel's CPython version, from its tag (tensorb64-V-cp313-cp313-...).
    abi="$(basename "$wheel" | cut -d- -f4)"
    minor="${abi:2:1}.${abi:3}"
    # numpy's manylinux aarch64 wheel and the pure-Python test tools, for the target, into a folder.
    "$python" -m pip install -q --target "$site" --only-binary=:all: --implementation cp --python-version "$minor" \
      --abi "$abi" --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
      "$wheel" "pytest>=7" "pytest-timeout==2.4.0" "hypothesis>=6"
    # A launcher as the interpreter's own path (qemu's -0 sets argv[0], which CPython takes for
    # sys.executable), so the tests that start `sys.executable` get qemu again: without binfmt_misc
    # an aarch64 binary cannot be exec'd directly. PYTHONHOME: the prefix is no longer next to it.
    mkdir -p "$work/bin"
    cat > "$work/bin/python$minor" <<EOF
#!/bin/sh
exec env QEMU_LD_PREFIX="$sysroot" PYTHONHOME="$sysroot/usr" PYTHONPATH="$site" \\
  qemu-aarch64 -0 "\$0" "$sysroot/usr/bin/python$minor" "\$@"
EOF
    chmod +x "$work/bin/python$minor"
    run=("$work/bin/python$minor")
    expected_level=neon
    ;;
  westmere)
    "$python" -m venv "$work/env"
    "$work/env/bin/python" -m pip install -q "$wheel" "pytest>=7" "pytest-timeout==2.4.0" "hypothesis>=6"
    # OPENBLAS_CORETYPE: numpy's bundled OpenBLAS reads qemu's CPU model as a Haswell and runs AVX2
    # code on the emulated Westmere (SIGILL at `import numpy`); a real Westmere is detected as
    # Nehalem, which is what this names.
    # The same launcher trick as for aarch64, so subprocesses run on the emulated CPU too; inside
    # the venv's bin, so CPython still finds the venv's pyvenv.cfg from sys.executable.
    cat > "$work/env/bin/python-westmere" <<EOF
#!/bin/sh
exec env OPENBLAS_CORETYPE=Nehalem qemu-x86_64 -cpu Westmere -0 "\$0" "$work/env/bin/python" "\$@"
EOF
    chmod +x "$work/env/bin/python-westmere"
    run=("$work/env/bin/python-westmere")
    expected_level=scalar
    ;;
  *) echo "test_emulated_wheel: unknown kind '$kind' (aarch64 or westmere)" >&2; exit 2 ;;
esac

cd "$repo"
echo "== $kind: the installed wheel, the level dispatch picks"
"${run[@]}" - "$expected_level" <<'EOF'
import pathlib, platform, sys
import numpy, tensorb64, tensorb64._native as native
assert "site" in native.__file__ or "site-packages" in native.__file__, native.__file__
print("native extension:", native.__file__)
print("machine:", platform.machine(), "| numpy", numpy.__version__, "| simd:", tensorb64.simd_level(),
      tensorb64.available_simd_levels())
assert tensorb64.simd_level() == sys.argv[1], tensorb64.simd_level()
EOF

echo "== $kind: the default level and TENSORB64_SIMD=scalar give the same bytes"
probe='
import hashlib, sys
import numpy as np, tensorb64
rng = np.random.default_rng(1)
h = hashlib.sha256()
for n in (1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 768, 769, 3072):
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-40, 5, n)
    for src in ("float64", "float32", "float16"):
        with np.errstate(over="ignore", under="ignore"):
            a = x.astype(src)
        for dtype in ("float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"):
            for order in ("little", "big"):
                h.update(tensorb64.encode(a, dtype=dtype, byteorder=order).encode())
                h.update(tensorb64.encode_binary_body(np.resize(a, (3, n)), dtype=dtype, byteorder=order)[0])
print(tensorb64.simd_level(), h.hexdigest())
'
default="$("${run[@]}" -c "$probe")"
scalar="$(TENSORB64_SIMD=scalar "${run[@]}" -c "$probe")"
echo "default: $default"
echo "scalar:  $scalar"
[[ "${default#* }" == "${scalar#* }" && "$scalar" == scalar\ * ]] || { echo "levels differ" >&2; exit 1; }

echo "== $kind: pytest ${tests[*]}"
# Emulated, each test runs tens of times slower: 1800 s each rather than pyproject's 600.
"${run[@]}" -m pytest -p no:cacheprovider -q -o timeout=1800 "${tests[@]}" "${deselect[@]}" 2>&1 | tee "$work/pytest.log" | tail -25
status=${PIPESTATUS[0]}
echo "$kind wheel suite: $(grep -E '^[0-9]+ (passed|failed)' "$work/pytest.log" | tail -1)"
exit "$status"
