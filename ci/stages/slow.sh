#!/usr/bin/env bash
# the slow tests: cross-CPU builds under qemu, the installed package as a Westmere and a Haswell, huge rows
source "$(dirname "$0")/lib.sh"
[[ -x $work/env/bin/python ]] || { echo "no test venv: run the stage 'test' first" >&2; exit 1; }
# One at a time: they build and run the C++ tests (qemu, 2 jobs each) and a multi-GiB row.
# sanitize.sh runs in full in the stage 'hardening'.
"$work/env/bin/python" -m pytest -p no:cacheprovider -q -m slow --deselect tests/test_hardening.py::test_sanitize_quick
