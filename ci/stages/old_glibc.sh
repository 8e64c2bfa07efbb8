#!/usr/bin/env bash
# old-glibc wheels (manylinux2014): Zig for x86_64, and aarch64 cross-compiled against Debian's arm64 CPython
source "$(dirname "$0")/lib.sh"
[[ -x $work/build-env/bin/python ]] || { echo "no build venv: run the stage 'build' first" >&2; exit 1; }
ci/arm64_sysroot.sh "$work/arm64-sysroot"
# A cold Zig cache, as on a fresh CI machine (it builds libc++ once per target); kept in $work
# for the stage 'wheels'.
rm -rf "$work/old-glibc"
ZIG_GLOBAL_CACHE_DIR="$work/zig-cache" PYTHON="$work/build-env/bin/python" ARM64_SYSROOT="$work/arm64-sysroot" \
  ci/build_old_glibc_wheels.sh "$work/old-glibc" x86_64 aarch64
built 'old-glibc/*manylinux2014_x86_64*.whl' old_glibc
built 'old-glibc/*manylinux2014_aarch64*.whl' old_glibc
