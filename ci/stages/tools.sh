#!/usr/bin/env bash
# system tools: qemu-user and cross compilers (cross-CPU tests), clang/libFuzzer and valgrind (hardening), MinGW-w64 and Wine, libc++, LLVM's Mach-O tools (the platform stages)
source "$(dirname "$0")/lib.sh"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    qemu-user g++-aarch64-linux-gnu g++-s390x-linux-gnu clang libclang-rt-14-dev valgrind clang-format \
    g++-mingw-w64-x86-64-posix wine wine64 libc++-14-dev libc++abi-14-dev llvm-14 >/dev/null
else
  echo "not root or no apt-get: the tools are taken as installed"
fi
