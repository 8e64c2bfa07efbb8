# Sourced by every stage (ci/stage NAME): where the repository is, and the one folder where stages
# leave what later stages use (the wheels, the arm64 sysroot, logs). A stage run on its own uses
# what an earlier run of the stages it needs left there.
#
#   TENSORB64_CI_WORK   that folder (default /tmp/tensorb64-ci-work; .ci/run makes a fresh one)
#   TENSORB64_CI_CACHE  what outlives runs: built interpreters, the vLLM venv (default
#                       /var/cache/tensorb64-ci)
#   PYTHON              the interpreter venvs are made from (default python3)
set -euo pipefail
shopt -s inherit_errexit
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${TENSORB64_CI_WORK:-/tmp/tensorb64-ci-work}"
mkdir -p "$work"
python="${PYTHON:-python3}"
cd "$repo"

# fresh_venv DIR PIP_ARGUMENTS...: a new venv at DIR with those packages installed.
fresh_venv() {
  local dir="$1"
  shift
  rm -rf "$dir"
  "$python" -m venv "$dir"
  [[ $# == 0 ]] || "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@"
}

# built FILE_GLOB WHAT: the one file an earlier stage built, or a message naming that stage.
built() {
  local found
  found=$(compgen -G "$work/$1" | head -1 || true)
  [[ -n $found ]] || { echo "no $work/$1: run the stage '$2' first (ci/stage $2)" >&2; exit 1; }
  echo "$found"
}

# The stage's test venv of a wheel: the wheel with torch and the test extra, and the check that
# the installed extension (not the source tree) is what imports.
test_venv() {
  local dir="$1" wheel="$2"
  fresh_venv "$dir" torch==2.13.0 "${wheel}[test]"
  (cd "$work" && "$dir/bin/python" -c "
import pathlib, tensorb64, tensorb64._native as n
assert 'site-packages' in n.__file__, n.__file__
print('native extension loaded:', n.__file__, '| simd:', tensorb64.simd_level(), tensorb64.available_simd_levels())
")
}

# run_suite PYTHON [MARKER_EXPRESSION]: the default suite (tests/conftest.py's selection) against
# an installed wheel, less what the expression deselects, on two pytest-xdist workers, then the
# tests marked `serial` alone (timing- or load-sensitive: a server under load with a deadline).
# Exit status 5 (nothing selected) counts as a pass for the serial pass only.
run_suite() {
  local py="$1" also="${2:-}" status=0
  "$py" -m pytest -p no:cacheprovider -q -n 2 -m "not serial${also:+ and ($also)}"
  "$py" -m pytest -p no:cacheprovider -q -m "serial${also:+ and ($also)}" || status=$?
  [[ $status == 0 || $status == 5 ]] || return "$status"
}
