#!/usr/bin/env bash
# every wheel: its tag and how it was tested
source "$(dirname "$0")/lib.sh"
echo "3.11 x86_64 $(basename "$(built 'wheelhouse/*.whl' build)"): the suite with torch, the slow tests, vLLM, hardening"
echo "3.11 x86_64 $(basename "$(built 'old-glibc/*manylinux2014_x86_64*.whl' old_glibc)"): the suite with torch, and under qemu Westmere"
echo "3.11 aarch64 $(basename "$(built 'old-glibc/*manylinux2014_aarch64*.whl' old_glibc)"): the emulated subset under qemu-aarch64"
grep -E '^wheel ' "$work/wheels.log" || true
