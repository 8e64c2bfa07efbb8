#!/usr/bin/env bash
# Builds the C++ core and its tests with a plain compiler (no CMake) and runs them:
#   run_cross.sh native    the host's g++ (x86-64: with the AVX2 and AVX-512 kernels; aarch64: NEON)
#   run_cross.sh s390x     s390x-linux-gnu-g++, run under qemu-s390x (a big-endian host)
#   run_cross.sh aarch64   aarch64-linux-gnu-g++, run under qemu-aarch64 (the NEON kernel)
#   run_cross.sh bench     the host's g++, builds and runs kernel_bench instead of the tests
# Extra arguments go to the program (core_tests --quick: misalignments 0..7, sampled lengths).
# Each kernel source gets its own instruction-set flags, as in cpp/CMakeLists.txt; nothing else does.
set -euo pipefail

arch="${1:?usage: run_cross.sh native|s390x|aarch64|bench [args...]}"
shift
cpp="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-cross.XXXXXX")"
trap 'rm -rf "$work"' EXIT

runner=()
program=core_tests
case "$arch" in
  native | bench)
    cxx="${CXX:-g++}"
    host="$(uname -m)"
    [[ "$arch" == bench ]] && program=kernel_bench
    ;;
  s390x)
    cxx=s390x-linux-gnu-g++; host=s390x; runner=(qemu-s390x) ;;
  aarch64)
    cxx=aarch64-linux-gnu-g++; host=aarch64; runner=(qemu-aarch64) ;;
  *)
    echo "run_cross.sh: unknown ARCH '$arch' (native, s390x, aarch64 or bench)" >&2; exit 2 ;;
esac
for tool in "$cxx" "${runner[@]}"; do
  command -v "$tool" >/dev/null || { echo "run_cross.sh: $tool not found" >&2; exit 3; }
done

common=(-std=c++17 -O2 -Wall -Wextra -I"$cpp/include")
avx2=(-mavx2 -mf16c -mfma -mbmi2)
avx512=("${avx2[@]}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vbmi)
sources=(encode response_body dispatch kernel_scalar)  # the core library's baseline sources (cpp/CMakeLists.txt)
defines=()
declare -A flags=()
case "$host" in
  x86_64)
    sources+=(kernel_avx2 kernel_avx512)
    defines=(-DTENSORB64_HAVE_X86_KERNELS)
    flags[kernel_avx2]="${avx2[*]}"
    flags[kernel_avx512]="${avx512[*]}"
    ;;
  aarch64 | arm64)
    sources+=(kernel_neon)
    defines=(-DTENSORB64_HAVE_NEON_KERNEL)
    ;;
esac

objects=()
for s in "${sources[@]}"; do
  # shellcheck disable=SC2086  # the per-file flags are a word list
  "$cxx" "${common[@]}" "${defines[@]}" ${flags[$s]:-} -c "$cpp/src/$s.cpp" -o "$work/$s.o"
  objects+=("$work/$s.o")
done
"$cxx" "${common[@]}" -c "$cpp/tests/$program.cpp" -o "$work/$program.o"
"$cxx" -static -pthread "$work/$program.o" "${objects[@]}" -o "$work/$program"

echo "run_cross.sh: $arch ($cxx${runner[*]:+, under ${runner[*]}})"
"${runner[@]}" "$work/$program" "$@"
