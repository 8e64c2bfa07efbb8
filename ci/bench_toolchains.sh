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

common=(-std=c++17 -O2 -Wall -Wextra -I"$cpp/include" -DTENSORB64_HAVE_X86_KERNELS)
avx2=(-mavx2 -mf16c -mfma -mbmi2)
avx512=("${avx2[@]}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vbmi)
build() {  # build NAME COMPILER... : kernel_bench into $work/NAME
  local name=$1; shift
  local objects=()
  for s in encode dispatch kernel_scalar kernel_avx2 kernel_avx512 float_text_avx512; do
    local flags=()
    [[ $s == kernel_avx2 ]] && flags=("${avx2[@]}")
    [[ $s == kernel_avx512 || $s == float_text_avx512 ]] && flags=("${avx512[@]}")
    "$@" "${common[@]}" "${flags[@]}" -c "$cpp/src/$s.cpp" -o "$work/$name-$s.o"
    objects+=("$work/$name-$s.o")
  done
  "$@" "${common[@]}" -c "$cpp/tests/kernel_bench.cpp" -o "$work/$name-bench.o"
  # g++: static, as run_cross.sh links it; zig: glibc cannot be linked statically, so dynamically
  # against glibc 2.17's symbols (libc++ static either way).
  local link=(-pthread)
  [[ $name == gxx ]] && link+=(-static)
  "$@" "${link[@]}" "$work/$name-bench.o" "${objects[@]}" -o "$work/$name"
}
build gxx "${CXX:-g++}"
build zig "$zig" c++ -target x86_64-linux-gnu.2.17
for round in $(seq "${ROUNDS:-2}"); do
  for name in gxx zig; do
    echo "== $name (round $round)"
    "$work/$name" "$@"
  done
done
