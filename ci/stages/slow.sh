#!/usr/bin/env bash
# the slow tests: cross-CPU builds under qemu, the installed package as a Westmere and a Haswell, huge rows
source "$(dirname "$0")/lib.sh"
[[ -x $work/env/bin/python ]] || { echo "no test venv: run the stage 'test' first" >&2; exit 1; }
# On two workers: each test builds with 2 jobs and then runs its programs under qemu on one core,
# so two side by side keep both cores busy. sanitize.sh runs in full in the stage 'hardening'.
"$work/env/bin/python" -m pytest -p no:cacheprovider -q -n 2 -m slow --deselect tests/test_hardening.py::test_sanitize_quick
