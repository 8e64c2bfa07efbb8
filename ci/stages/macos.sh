#!/usr/bin/env bash
# macOS, cross-built (nothing here runs Mach-O): the core's C++ tests and the extension for arm64 (11.0) and x86_64 (10.13) with Apple's libc++ availability rules, each checked (ci/check_macho.sh)
source "$(dirname "$0")/lib.sh"
[[ -x $work/build-env/bin/python ]] || { echo "no build venv: run the stage 'build' first" >&2; exit 1; }
# The build venv has Zig (the stage 'build'); its cache is this run's, like old_glibc's (Zig builds
# libc++ once per target).
zig="$("$work/build-env/bin/python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')"
for arch in arm64 x86_64; do
  PATH="$work/build-env/bin:$PATH" ZIG="$zig" ZIG_GLOBAL_CACHE_DIR="$work/zig-cache" \
    PYTHON="$work/build-env/bin/python" WARNINGS_AS_ERRORS=ON cpp/tests/run_cross.sh "macos-$arch"
done
