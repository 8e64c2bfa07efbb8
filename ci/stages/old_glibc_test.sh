#!/usr/bin/env bash
# the old-glibc wheels: x86_64 (torch oracles) natively and under qemu Westmere, aarch64 under qemu-aarch64
source "$(dirname "$0")/lib.sh"
x86_64=$(built 'old-glibc/*manylinux2014_x86_64*.whl' old_glibc)
aarch64=$(built 'old-glibc/*manylinux2014_aarch64*.whl' old_glibc)
# The Zig (clang, static libc++) build is the one old-glibc users get, and this is its only run
# with torch: the other CPython versions' Zig wheels run without torch (stage wheel_tests), where
# most modules skip. So the default suite runs here too, on two workers; the slow tests do not
# (they build the sources, not the wheel: run once, in the stage 'slow').
test_venv "$work/env-old-glibc" "$x86_64"
run_suite "$work/env-old-glibc/bin/python" "not needs_source_tree"  # the example server: the g++ run has it
# The two emulated runs side by side: each is one qemu process (one core).
PYTHON="$python" ci/test_emulated_wheel.sh westmere "$x86_64" >"$work/westmere.log" 2>&1 &
westmere=$!
status=0
PYTHON="$work/build-env/bin/python" ARM64_SYSROOT="$work/arm64-sysroot" ci/test_emulated_wheel.sh aarch64 "$aarch64" || status=$?
wait "$westmere" || status=$?
cat "$work/westmere.log"
exit "$status"
