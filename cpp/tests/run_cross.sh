#!/usr/bin/env bash
# Builds the C++ core and its tests with the given compiler and runs them:
#   run_cross.sh native    the host's g++ (x86-64: with the AVX2 and AVX-512 kernels; aarch64: NEON)
#   run_cross.sh s390x     s390x-linux-gnu-g++, run under qemu-s390x (a big-endian host)
#   run_cross.sh aarch64   aarch64-linux-gnu-g++, run under qemu-aarch64 (the NEON kernel)
#   run_cross.sh westmere  the host's g++ (x86-64), run under qemu-x86_64 -cpu Westmere: a CPU with
#                          no AVX, where dispatch must pick scalar and nothing may use AVX
#   run_cross.sh bench     the host's g++, builds and runs kernel_bench instead of the tests
# Extra arguments go to core_tests (--quick: misalignments 0..7, sampled lengths), which runs after
# dispatch_tests (made-up CPUs), and to float_text_tests (--quick: 2^18 random patterns), or to
# kernel_bench.
# It builds through cpp/CMakeLists.txt (a cross build: CMAKE_SYSTEM_NAME and the cross compiler), so
# the sources and each kernel's instruction-set flags are the ones written there, and nowhere else.
set -euo pipefail

arch="${1:?usage: run_cross.sh native|s390x|aarch64|westmere|bench [args...]}"
shift
cpp="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-cross.XXXXXX")"
trap 'rm -rf "$work"' EXIT

runner=()
case "$arch" in
  native | bench)
    cxx="${CXX:-g++}"
    host="$(uname -m)"
    ;;
  s390x)
    cxx=s390x-linux-gnu-g++; host=s390x; runner=(qemu-s390x) ;;
  aarch64)
    cxx=aarch64-linux-gnu-g++; host=aarch64; runner=(qemu-aarch64) ;;
  westmere)
    cxx="${CXX:-g++}"; host=x86_64; runner=(qemu-x86_64 -cpu Westmere) ;;
  *)
    echo "run_cross.sh: unknown ARCH '$arch' (native, s390x, aarch64, westmere or bench)" >&2; exit 2 ;;
esac
for tool in "$cxx" cmake ${runner[0]:+"${runner[0]}"}; do
  command -v "$tool" >/dev/null || { echo "run_cross.sh: $tool not found" >&2; exit 3; }
done

config=(-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DTENSORB64_BUILD_TESTS=ON
        -DCMAKE_EXE_LINKER_FLAGS=-static)
if [[ "$host" != "$(uname -m)" ]]; then
  config+=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$host")
fi
if command -v ninja >/dev/null; then config+=(-G Ninja); fi
programs=(dispatch_tests float_text_tests body_reader_tests number_parser_tests core_tests)
if [[ "$arch" == bench ]]; then programs=(kernel_bench); fi
log="$work/build.log"
{ cmake -S "$cpp" -B "$work" "${config[@]}" &&
  cmake --build "$work" -j "${JOBS:-2}" --target "${programs[@]}"; } >"$log" 2>&1 ||
  { cat "$log" >&2; exit 1; }

# The test programs' watchdog (tests/watchdog.hpp) allows 120 s between two checks by default;
# qemu runs them many times slower.
if [[ ${#runner[@]} -gt 0 ]]; then export TENSORB64_TEST_TIMEOUT="${TENSORB64_TEST_TIMEOUT:-600}"; fi
echo "run_cross.sh: $arch ($cxx${runner[*]:+, under ${runner[*]}})"
if [[ "$arch" != bench ]]; then "${runner[@]}" "$work/dispatch_tests"; fi
"${runner[@]}" "$work/${programs[-1]}" "$@"
if [[ "$arch" != bench ]]; then "${runner[@]}" "$work/float_text_tests" "$@"; fi
if [[ "$arch" != bench ]]; then "${runner[@]}" "$work/body_reader_tests"; fi
# 200,000 random texts against the target's strtod (the default 2,000,000 is slow under qemu).
if [[ "$arch" != bench ]]; then "${runner[@]}" "$work/number_parser_tests" 200000; fi
