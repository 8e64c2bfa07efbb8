#!/usr/bin/env bash
# Checks a Mach-O file built here for macOS, which nothing here can run: its CPU, the minimum macOS
# it declares, that it links only the system's libraries (/usr/lib, /System), and with --module
# that it exports PyInit__native and none of the package's own symbols. Prints what it found.
#
# What --module lets through, and why: a module linked by Zig carries Zig's static libc++, whose
# replaceable operators new and delete have default visibility, and Zig's Mach-O linker has no
# option to hide them (it rejects -exported_symbol and ignores -exported_symbols_list); with
# -shared (its -bundle crashes) the linker adds a dylib's header symbols. The wheels are linked by
# Apple's linker against the system's libc++, told to export _PyInit__native alone (CMakeLists.txt).
#
#   ci/check_macho.sh FILE arm64|x86_64 MINIMUM_MACOS [--module]
#
# Needs llvm-objdump and llvm-nm (Debian's llvm-14: LLVM_BIN, default /usr/lib/llvm-14/bin).
set -euo pipefail
file="${1:?usage: check_macho.sh FILE arm64|x86_64 MINIMUM_MACOS [--module]}"
arch="${2:?}"
minimum="${3:?}"
module="${4:-}"
bin="${LLVM_BIN:-/usr/lib/llvm-14/bin}"
headers="$("$bin/llvm-objdump" --macho --private-headers "$file")"
fail() { echo "check_macho.sh: $file: $*" >&2; exit 1; }

# The CPU, from the Mach header's cputype.
cpu="$(awk '/magic/ { getline; print $2; exit }' <<<"$headers")"
case "$arch:$cpu" in
  arm64:ARM64 | x86_64:X86_64) ;;
  *) fail "cputype $cpu, expected $arch" ;;
esac
# The minimum macOS: LC_BUILD_VERSION's minos (macOS 10.14 and later), or LC_VERSION_MIN_MACOSX's
# version (the older load command, for 10.13).
declared="$(awk '/cmd LC_BUILD_VERSION/ { b = 1 } b && /minos/ { print $2; exit }
                 /cmd LC_VERSION_MIN_MACOSX/ { v = 1 } v && /^ *version/ { print $2; exit }' <<<"$headers")"
[[ $declared == "$minimum" ]] || fail "minimum macOS '$declared', expected $minimum"
# The libraries it links.
libraries="$(awk '/cmd LC_(LOAD|LOAD_WEAK|REEXPORT)_DYLIB/ { d = 1 } d && /name/ { print $2; d = 0 }' <<<"$headers")"
while read -r library; do
  case "$library" in
    /usr/lib/* | /System/Library/*) ;;
    *) fail "links $library, not a system library" ;;
  esac
done <<<"$libraries"
summary="$cpu, macOS >= $declared, links $(echo $libraries)"
if [[ $module == --module ]]; then
  exported="$("$bin/llvm-nm" --extern-only --defined-only --just-symbol-name "$file")"
  # operator new/delete (__Znwm, __Znam..., __ZdlPv, __ZdaPv...) and the dylib header's symbols
  runtime='^(__Zn[wa]m|__Zd[la]Pv)|^(___dso_handle|__mh_dylib_header)$'
  own="$(grep -Ev "$runtime" <<<"$exported" | tr '\n' ' ')"
  [[ $own == "_PyInit__native " ]] || fail "exports '$own', expected _PyInit__native only"
  summary+=", exports _PyInit__native (and $(grep -Ec "$runtime" <<<"$exported" || true) of the static runtime's)"
fi
echo "$summary"
