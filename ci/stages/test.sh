#!/usr/bin/env bash
# tests: the default suite against the installed wheel (torch, the test extra), two xdist workers
source "$(dirname "$0")/lib.sh"
wheel=$(built 'wheelhouse/*.whl' build)
test_venv "$work/env" "$wheel"
run_suite "$work/env/bin/python"
