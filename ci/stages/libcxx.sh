#!/usr/bin/env bash
# libc++ on Linux: the core and its C++ tests (their quick sizes) built by Debian's clang with LLVM's libc++ (warnings as errors), run at every level
source "$(dirname "$0")/lib.sh"
# The quick sizes: libc++ 14 has no floating-point from_chars, so the float-text tests' oracle is
# the portable one (printf and strtod searched), which made the full sizes take 441 s here against
# 61 s for these; the full sizes run with g++ (stage 'slow').
# The Python suite against a clang + libc++ extension is old_glibc_test's: the Zig wheel is built
# by clang with a static libc++ and its suite runs there with torch (and without, on each CPython,
# in wheel_tests); it is not run a third time here.
WARNINGS_AS_ERRORS=ON cpp/tests/run_cross.sh libcxx --quick
