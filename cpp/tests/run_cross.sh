#!/usr/bin/env bash
# Builds the C++ core and its tests with the given compiler and runs them with ctest:
#   run_cross.sh native    the host's g++ (x86-64: with the AVX2 and AVX-512 levels; aarch64: NEON)
#   run_cross.sh s390x     s390x-linux-gnu-g++, run under qemu-s390x (a big-endian host)
#   run_cross.sh aarch64   aarch64-linux-gnu-g++, run under qemu-aarch64 (the NEON level)
#   run_cross.sh westmere  the host's g++ (x86-64), run under qemu-x86_64 -cpu Westmere: a CPU with
#                          no AVX, where dispatch must pick scalar and nothing may use AVX
#   run_cross.sh bench     the host's g++, builds and runs kernel_bench instead of the tests
#   run_cross.sh windows   MinGW-w64's g++ (Debian's, posix threads), run under Wine (WINEPREFIX
#                          from the environment): the Windows paths (cpuid.h and xgetbv as GCC has
#                          them there, no fork, the Windows C runtime's stdio)
#   run_cross.sh libcxx    the host's clang with LLVM's libc++ in place of libstdc++
#   run_cross.sh macos-arm64 / macos-x86_64
#                          Zig's clang for macOS 11.0 (arm64) / 10.13 (x86_64) with Apple's libc++
#                          availability rules on, as AppleClang has them: builds the test programs
#                          and the extension module (Mach-O; nothing here runs them), then checks
#                          each (ci/check_macho.sh: architecture, minimum OS, system libraries; the
#                          module's exports). ZIG: the zig binary; PYTHON: the CPython whose headers
#                          the module is compiled against (python3 by default: Linux's pyconfig.h
#                          stands in for the Mac's, which nothing here has).
# Tests: `run_cross.sh ARCH` runs the tests labelled full, `run_cross.sh ARCH --quick` those
# labelled quick (the programs and their arguments are declared once, in cpp/CMakeLists.txt). For
# bench, extra arguments go to kernel_bench.
# It builds through cpp/CMakeLists.txt (a cross build: CMAKE_SYSTEM_NAME and the cross compiler), so
# the sources and each level's instruction-set flags are the ones written there, and nowhere else;
# an emulated target's programs run under CMAKE_CROSSCOMPILING_EMULATOR (qemu), which ctest puts
# before each test's command.
set -euo pipefail

arch="${1:?usage: run_cross.sh native|s390x|aarch64|westmere|bench [--quick | bench args...]}"
shift
cpp="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-cross.XXXXXX")"
trap 'rm -rf "$work"' EXIT

emulator=()
system=Linux
static=-static
cxx_flags=()
build_only=
case "$arch" in
  native | bench)
    cxx="${CXX:-g++}"; host="$(uname -m)" ;;
  s390x)
    cxx=s390x-linux-gnu-g++; host=s390x; emulator=(qemu-s390x) ;;
  aarch64)
    cxx=aarch64-linux-gnu-g++; host=aarch64; emulator=(qemu-aarch64) ;;
  westmere)
    cxx="${CXX:-g++}"; host=x86_64; emulator=(qemu-x86_64 -cpu Westmere) ;;
  windows)
    cxx=x86_64-w64-mingw32-g++-posix; host=x86_64; system=Windows; emulator=(wine) ;;
  libcxx)
    # Dynamically linked: Debian's static libc++ needs libc++abi and libunwind named by hand.
    cxx=clang++; host="$(uname -m)"; static=; cxx_flags=(-stdlib=libc++) ;;
  macos-arm64 | macos-x86_64)
    zig="${ZIG:?ZIG: the zig binary of the ziglang wheel}"
    case "$arch" in
      macos-arm64) host=arm64; minimum_macos=11.0 ;;
      *) host=x86_64; minimum_macos=10.13 ;;
    esac
    # CMake wants one executable per tool: thin wrappers around the one zig binary. Zig's Mach-O
    # linker crashes on -bundle (how CMake links a MODULE): the wrapper asks for a dylib, which
    # Python loads the same way.
    mkdir -p "$work/bin"
    printf '#!/bin/sh\nfor a do shift; [ "$a" = -bundle ] && a=-shared; set -- "$@" "$a"; done\nexec "%s" c++ -target %s "$@"\n' \
      "$zig" "${host/arm64/aarch64}-macos.$minimum_macos" > "$work/bin/c++"
    for tool in ar ranlib; do printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" > "$work/bin/$tool"; done
    chmod +x "$work/bin"/*
    cxx="$work/bin/c++"; system=Darwin; static=; build_only=1
    # Apple's availability rules, which Zig turns off for the libc++ it links statically, as
    # AppleClang has them with the SDK's libc++; libc++ 22 warns (#warning) that it no longer
    # supports a target below macOS 11.0 itself: the x86_64 wheels are built by AppleClang and the
    # SDK's libc++, which do.
    cxx_flags=(-U_LIBCPP_HAS_VENDOR_AVAILABILITY_ANNOTATIONS -D_LIBCPP_HAS_VENDOR_AVAILABILITY_ANNOTATIONS=1)
    [[ $arch == macos-arm64 ]] || cxx_flags+=("-Wno-#warnings") ;;
  *)
    echo "run_cross.sh: unknown ARCH '$arch' (native, s390x, aarch64, westmere, windows, libcxx, macos-arm64, macos-x86_64 or bench)" >&2; exit 2 ;;
esac
label=full
if [[ "$arch" != bench ]]; then
  case "${1:-}" in
    "") ;;
    --quick) label=quick ;;
    *) echo "run_cross.sh: unknown option '$1' (only --quick)" >&2; exit 2 ;;
  esac
fi
for tool in "$cxx" cmake ctest ${emulator[0]:+"${emulator[0]}"}; do
  command -v "$tool" >/dev/null || { echo "run_cross.sh: $tool not found" >&2; exit 3; }
done

config=(-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DTENSORB64_BUILD_TESTS=ON
        "-DCMAKE_EXE_LINKER_FLAGS=$static ${cxx_flags[*]}" "-DCMAKE_CXX_FLAGS=${cxx_flags[*]}"
        -DCMAKE_COMPILE_WARNING_AS_ERROR=${WARNINGS_AS_ERRORS:-OFF})
# Every emulated target is configured as a cross build (Westmere too, on an x86-64 host): CMake
# uses the emulator only when cross-compiling.
if [[ ${#emulator[@]} -gt 0 ]]; then
  emulator_list="$(IFS=';'; echo "${emulator[*]}")"
  config+=("-DCMAKE_CROSSCOMPILING_EMULATOR=$emulator_list")
fi
if [[ ${#emulator[@]} -gt 0 || $system != Linux ]]; then
  config+=(-DCMAKE_SYSTEM_NAME="$system" -DCMAKE_SYSTEM_PROCESSOR="$host")
fi
if [[ $system == Darwin ]]; then
  config+=(-DCMAKE_AR="$work/bin/ar" -DCMAKE_RANLIB="$work/bin/ranlib" -DCMAKE_OSX_ARCHITECTURES="$host")
fi
if command -v ninja >/dev/null; then config+=(-G Ninja); fi
target=tensorb64_tests
if [[ "$arch" == bench ]]; then target=kernel_bench; fi
log="$work/build.log"
{ cmake -S "$cpp" -B "$work" "${config[@]}" &&
  cmake --build "$work" -j "${JOBS:-2}" --target "$target"; } >"$log" 2>&1 ||
  { cat "$log" >&2; exit 1; }

echo "run_cross.sh: $arch ($cxx${emulator[*]:+, under ${emulator[*]}})"
if [[ -n $build_only ]]; then
  # Nothing here runs a Mach-O program: what was built, for which CPU and which macOS.
  for program in "$work"/*_tests; do
    printf '%s: %s\n' "$(basename "$program")" \
      "$("$cpp/../ci/check_macho.sh" "$program" "$host" "$minimum_macos")"
  done
  # The extension, through the top-level CMakeLists.txt as scikit-build-core drives it (the
  # project's name and version are what it passes).
  python="${PYTHON:-python3}"
  include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  { cmake -S "$cpp/.." -B "$work/module" "${config[@]}" -DSKBUILD_PROJECT_NAME=tensorb64 \
      -DSKBUILD_PROJECT_VERSION=0.0.0 -DPython_EXECUTABLE="$(command -v "$python")" \
      -DPython_INCLUDE_DIR="$include" &&
    cmake --build "$work/module" -j "${JOBS:-2}" --target _native; } >"$log" 2>&1 ||
    { cat "$log" >&2; exit 1; }
  printf '_native.so (the extension): %s\n' \
    "$("$cpp/../ci/check_macho.sh" "$work/module/_native.so" "$host" "$minimum_macos" --module)"
  exit
fi
if [[ "$arch" == bench ]]; then
  "$work/kernel_bench" "$@"
  exit
fi
# The test programs' watchdog (tests/watchdog.hpp) allows 120 s between two checks by default;
# qemu runs them many times slower. ctest's own limit is per test.
if [[ ${#emulator[@]} -gt 0 ]]; then export TENSORB64_TEST_TIMEOUT="${TENSORB64_TEST_TIMEOUT:-600}"; fi
# --verbose shows each program's own output (which levels ran, its counts) as "N: line": the
# prefix is dropped so that the lines read as the programs wrote them.
ctest --test-dir "$work" -L "^$label\$" --timeout "${CTEST_TIMEOUT:-1200}" --verbose |
  sed -u -E 's/^[0-9]+: //'
