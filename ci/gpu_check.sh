#!/usr/bin/env bash
# One-shot check on a machine with a CUDA GPU: builds the package, runs the CUDA
# tests and the CPU tests of the staging pipeline, then `python -m tensorb64 bench --device cuda`,
# printing everything. Expected: ~1-2 min build (16 cores), ~1 min tests, ~1 min bench.
#   ci/gpu_check.sh [OUT_DIR]        (OUT_DIR, default $OUT or ./gpu_check_out: the log and bench JSON)
# Environment: PYTHON (default python3: one with torch (CUDA), scikit-build-core (the build is
# --no-build-isolation; the binding is CPython's C API, nothing else to build it with), and the
# test extra's pytest, pytest-timeout and hypothesis); WHEELS, a folder of wheels to install offline first (pybase64: the bench's
# pybase64 path; without it that column is left out). Installs into a venv that sees the
# system's site-packages (torch), never into the system Python (NO_VENV=1, the default where PYTHON is a venv's: into that venv). Exit status: non-zero if the
# build, a test or the bench's output check failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-${OUT:-gpu_check_out}}"
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1
python="${PYTHON:-python3}"
status=0
step() { echo; echo "== $* ($(date +%T))"; }

step machine
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || true
nproc; "$python" --version
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available(), 'devices', torch.cuda.device_count())" || exit 3

step venv and build
# A venv made from a venv's interpreter sees the base interpreter's packages, not that venv's
# (on the H200 image python3 is /opt/torch/.venv's, holding torch and scikit-build-core): there,
# install into PYTHON's own venv.
if [ -z "${NO_VENV:-}" ]; then
  NO_VENV=$("$python" -c 'import sys; print(int(sys.prefix != sys.base_prefix))') || exit 3
fi
if [ "$NO_VENV" = 1 ]; then  # PYTHON is already a virtual environment's
  py="$python"
else
  venv="${TMPDIR:-/tmp}/tensorb64-gpu-venv"
  "$python" -m venv --system-site-packages "$venv" || exit 3
  py="$venv/bin/python"
fi
if [ -n "${WHEELS:-}" ]; then
  "$py" -m pip install -q --no-index --find-links "$WHEELS" pybase64 || echo "pybase64 from $WHEELS failed: the bench leaves its column out"
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
timeout 480 "$py" -m pip install -q --no-build-isolation --no-deps . || { echo "BUILD FAILED"; exit 1; }
# (src/ is not on the tests' path: they import the package just installed)
"$py" -c "import tensorb64, sys; print(tensorb64.__file__, tensorb64.simd_level())"

step "CUDA tests (-m cuda) and the staging pipeline's CPU tests"
timeout 300 "$py" -m pytest -p no:cacheprovider -q -rs -m cuda tests/test_cuda.py tests/test_package.py \
  || { status=1; echo "CUDA TESTS FAILED"; }
timeout 120 "$py" -m pytest -p no:cacheprovider -q tests/test_cuda_staging.py || { status=1; echo "STAGING TESTS FAILED"; }

step "bench --device cuda"
timeout 300 "$py" -m tensorb64 bench --device cuda --json "$out/bench_cuda.json" || { status=1; echo "BENCH FAILED (or an output check failed)"; }

step "done: status $status"
exit $status
