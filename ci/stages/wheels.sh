#!/usr/bin/env bash
# wheels for CPython 3.10, 3.12, 3.13, 3.14 (Zig, manylinux2014) and 3.13t, 3.14t (g++)
source "$(dirname "$0")/lib.sh"
rm -rf "$work/wheels"
ZIG_GLOBAL_CACHE_DIR="$work/zig-cache" AARCH64="" ci/build_wheels.sh "$work/wheels" 3.10 3.12 3.13 3.14 3.13t 3.14t \
  | tee "$work/wheels.log" | grep -E '^(wheel|repaired|exported|build_old_glibc_wheels:)'
[[ ${PIPESTATUS[0]} == 0 ]]
