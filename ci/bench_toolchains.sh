#!/usr/bin/env bash
# The kernels built by the two x86-64 toolchains, side by side: the host's g++ (as
# cpp/tests/run_cross.sh bench builds them, the native wheel's compiler) and Zig's clang for
# glibc 2.17 (the old-glibc wheel's compiler), each with the same per-file flags. The two
# kernel_bench binaries run alternately, twice each, so the machine's noise shows as the spread
# between runs of one binary:
#
#   ROUNDS=2 ci/bench_toolchains.sh [seconds per measurement, default 0.2]
#
# PYTHON: a Python with ziglang installed.
set -euo pipefail

cpp="$(cd "$(dirname "${BASH_SOURCE[0]}")/../cpp" && pwd)"
python="${PYTHON:-python3}"
zig="$("$python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Both build through cpp/CMakeLists.txt, so the sources and each kernel's flags are the ones
# written there (and nowhere else).
build() {  # build NAME CXX: kernel_bench into $work/NAME
  local name=$1 cxx=$2 link=()
  [[ $name == gxx ]] && link=(-DCMAKE_EXE_LINKER_FLAGS=-static)  # as run_cross.sh links it
  cmake -S "$cpp" -B "$work/$name-build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
        -DTENSORB64_BUILD_TESTS=ON "${link[@]}" >/dev/null
  cmake --build "$work/$name-build" -j "${JOBS:-2}" --target kernel_bench >/dev/null
  cp "$work/$name-build/kernel_bench" "$work/$name"
}
# zig: glibc cannot be linked statically, so dynamically against glibc 2.17's symbols (libc++
# static either way), through a one-line compiler wrapper.
printf '#!/bin/sh\nexec "%s" c++ -target x86_64-linux-gnu.2.17 "$@"\n' "$zig" > "$work/zig-cxx"
chmod +x "$work/zig-cxx"
build gxx "${CXX:-g++}"
build zig "$work/zig-cxx"
for round in $(seq "${ROUNDS:-2}"); do
  for name in gxx zig; do
    echo "== $name (round $round)"
    "$work/$name" "$@"
  done
done
