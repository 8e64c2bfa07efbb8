#!/usr/bin/env bash
# Windows: the core and its C++ tests built by MinGW-w64's g++ (warnings as errors), run under Wine at every level this CPU has
source "$(dirname "$0")/lib.sh"
# A Wine prefix of its own, made on first use (about 10 s) in the run's folder; Wine's own
# diagnostics off (the programs' output is what is read).
export WINEPREFIX="$work/wine" WINEDEBUG=-all
WARNINGS_AS_ERRORS=ON cpp/tests/run_cross.sh windows
