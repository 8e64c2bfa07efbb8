#!/usr/bin/env bash
# Windows: the core and its C++ tests (their quick sizes) built by MinGW-w64's g++ (warnings as errors), run under Wine at every level this CPU has
source "$(dirname "$0")/lib.sh"
# A Wine prefix of its own, made on first use (about 10 s) in the run's folder; Wine's own
# diagnostics off (the programs' output is what is read).
export WINEPREFIX="$work/wine" WINEDEBUG=-all
# The quick sizes, as under qemu: every level and every test, fewer lengths and values (the full
# sizes made the stage 90 s here against 50 at these; they run with g++ in the stage 'slow').
WARNINGS_AS_ERRORS=ON cpp/tests/run_cross.sh windows --quick
