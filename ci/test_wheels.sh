#!/usr/bin/env bash
# Installs each CPython version's x86_64 wheel from a folder (ci/build_wheels.sh) into a fresh
# venv of its own interpreter (ci/interpreters.sh) and runs the test suite against it:
#
#   ci/test_wheels.sh WHEELDIR [NAME ...]     NAME: 3.10 3.12 3.13 3.14 3.13t 3.14t (default)
#
# Prints, for each: the wheel's tag, where the extension was loaded from, the SIMD level, for the
# free-threaded builds that the GIL stayed off after `import tensorb64` (sys._is_gil_enabled()
# False, no RuntimeWarning), and the suite's pass line.
#
# What runs: the suite less the `slow` and `vllm` tests and those marked `needs_source_tree` (the
# example server, the sanitizer and cross-CPU builds: they start the sources or build them with
# the host's tools). Test tools from PyPI, binary wheels only (--only-binary=:all:: a free-threaded
# interpreter must not build hypothesis' or numpy's dependencies from source): numpy, pytest,
# hypothesis, starlette and ml_dtypes. No torch: the pinned torch 2.13.0 is the CPU build for
# CPython 3.11 only here (PyPI's wheels for the others are the CUDA build, GBs with their
# dependencies), so the modules and tests whose oracle is torch skip, each with its reason; the
# whole suite with torch runs on 3.11 (.ci/run). tests/test_free_threading.py runs on every one.
#
# Environment: TENSORB64_CI_CACHE (ci/interpreters.sh), PYTEST_ARGS (extra pytest arguments).
set -euo pipefail
shopt -s inherit_errexit

wheels="$(cd "${1:?usage: test_wheels.sh WHEELDIR [NAME ...]}" && pwd)"
shift
[[ $# -gt 0 ]] || set -- 3.10 3.12 3.13 3.14 3.13t 3.14t
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-wheels.XXXXXX")"
trap 'rm -rf "$work"' EXIT
test_tools=(pytest hypothesis starlette ml_dtypes)
summary=()
status=0

mapfile -t interpreters < <("$repo/ci/interpreters.sh" "$@")
for line in "${interpreters[@]}"; do
  read -r name python <<<"$line"
  # The wheel's tags: cp313-cp313 for 3.13, cp313-cp313t for the free-threaded 3.13.
  tags="$("$python" -c 'import sys; v = "cp%d%d" % sys.version_info[:2]; print(f"{v}-{v}{sys.abiflags}")')"
  wheel="$(ls "$wheels"/tensorb64-*-"$tags"-*x86_64*.whl 2>/dev/null | head -1 || true)"
  [[ -n "$wheel" ]] || { echo "test_wheels: no $tags x86_64 wheel in $wheels" >&2; exit 1; }
  echo "== CPython $name ($("$python" -c 'import sys; print(sys.version.split()[0])')): $(basename "$wheel")"
  env="$work/env-$name"
  "$python" -m venv "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "$wheel" "${test_tools[@]}"
  # The installed wheel (not the source tree) is what is imported; the GIL stays off (PYTHON_GIL
  # unset: PYTHON_GIL=0 would force it off whatever the module declares; -W error: the
  # "GIL has been enabled" RuntimeWarning is an error).
  (cd "$work" && env -u PYTHON_GIL "$env/bin/python" -W error::RuntimeWarning - "$name" <<'EOF'
import sys, sysconfig
import tensorb64, tensorb64._native as native
assert "site-packages" in native.__file__, native.__file__
line = f"loaded: {native.__file__} | simd: {tensorb64.simd_level()}"
if sysconfig.get_config_var("Py_GIL_DISABLED"):
    assert not sys._is_gil_enabled(), "importing tensorb64 turned the GIL on"
    line += " | free-threaded: GIL enabled after import tensorb64: False"
print(line)
EOF
  )
  # From the repository root (the tests' helper modules), against the installed package: the
  # source tree's src/ layout keeps the uninstalled package off sys.path.
  (cd "$repo" && env -u PYTHON_GIL "$env/bin/python" -m pytest -p no:cacheprovider -q -m "not needs_source_tree" \
      ${PYTEST_ARGS:-} 2>&1) > "$work/pytest-$name.log" || status=1
  tail -4 "$work/pytest-$name.log"
  pass_line="$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$work/pytest-$name.log" | tail -1)"
  [[ $status == 0 ]] || grep -E '^(FAILED|ERROR)' "$work/pytest-$name.log" | head -20
  summary+=("$name $(basename "$wheel"): $pass_line")
done
echo "== wheel suites"
printf '%s\n' "${summary[@]}"
exit "$status"
