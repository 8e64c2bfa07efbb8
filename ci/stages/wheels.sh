#!/usr/bin/env bash
# wheels for CPython 3.10, 3.12, 3.13, 3.14 (Zig, manylinux2014) and 3.13t, 3.14t (g++)
source "$(dirname "$0")/lib.sh"
rm -rf "$work/wheels"
# The stage 'old_glibc''s zig and Zig cache: its x86_64 libc++ is reused by every wheel here.
zig="$("$work/build-env/bin/python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')"
ZIG="$zig" ZIG_GLOBAL_CACHE_DIR="$work/zig-cache" AARCH64="" ci/build_wheels.sh "$work/wheels" 3.10 3.12 3.13 3.14 3.13t 3.14t \
  | tee "$work/wheels.log" | grep -E '^(wheel|repaired|exported|build_old_glibc_wheels:)'
[[ ${PIPESTATUS[0]} == 0 ]]
