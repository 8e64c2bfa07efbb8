#!/usr/bin/env bash
# hardening: ASan/UBSan (C++ tests and the Python suite), valgrind, libFuzzer, TSan on free-threaded 3.14
source "$(dirname "$0")/lib.sh"
[[ -x $work/env/bin/python ]] || { echo "no test venv: run the stage 'test' first" >&2; exit 1; }
# The ASan build of the extension is made in the test venv, so it needs the build backend there.
"$work/env/bin/python" -m pip install -q "scikit-build-core>=0.10"
PYTHON="$work/env/bin/python" TENSORB64_HARDENING_BUILD="$work/hardening" \
  TSAN_PYTHON="$(ci/interpreters.sh 3.14t-tsan | cut -d' ' -f2)" cpp/hardening/sanitize.sh --full
