#!/usr/bin/env bash
# Unpacks Debian's arm64 CPython (interpreter, standard library, headers) and the arm64 glibc it
# runs on into a folder, without installing anything arm64 into the system:
#
#   ci/arm64_sysroot.sh DIR [3.11|3.13]     3.11 (default): Debian 12's; 3.13: Debian 13's
#
# DIR then serves as qemu-aarch64's library prefix (qemu-aarch64 -L DIR DIR/usr/bin/python3.X,
# or QEMU_LD_PREFIX=DIR) and as the source of the target's Python headers for the cross-compiled
# wheel (ci/build_old_glibc_wheels.sh). The packages are fetched with `apt-get download` through
# an apt configuration of its own (the suite's arm64 index, kept beside DIR), so the system's apt
# sources and architectures are untouched; installing python3.X:arm64 itself would replace the
# host's amd64 python3.X anyway (the package is Multi-Arch: allowed, not same).
set -euo pipefail

dir="${1:?usage: arm64_sysroot.sh DIR [3.11|3.13]}"
minor="${2:-3.11}"
case "$minor" in
  3.11) suite=bookworm ;;
  3.13) suite=trixie ;;
  *) echo "arm64_sysroot: no Debian suite packages CPython $minor here (3.11 or 3.13)" >&2; exit 2 ;;
esac
if [[ -x "$dir/usr/bin/python$minor" ]]; then
  echo "arm64_sysroot: $dir already holds python$minor"
  exit 0
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
state="$dir.apt"
mkdir -p "$state/lists/partial" "$state/archives/partial"
echo "deb [arch=arm64] ${DEBIAN_MIRROR:-http://deb.debian.org/debian} $suite main" > "$state/sources.list"
apt_options=(-o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state" -o Dir::State::Status=/dev/null
             -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Acquire::Check-Valid-Until=false)
apt-get "${apt_options[@]}" update -qq
# The interpreter, its standard library and headers, with their run-time closure (apt-cache depends
# --recurse), less what a bare unpack does not need: the package tools' own dependencies (debconf
# and its front end), time zone data, and the C library's tools. libstdc++6: numpy's wheel needs it.
closure="$(apt-cache "${apt_options[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "python$minor-minimal" "libpython$minor-stdlib" "libpython$minor-dev" \
  libstdc++6 | grep -v '^ ' | grep -v '^<' | sort -u)"
packages=()
for package in $closure; do
  case "$package" in
    debconf | cdebconf | libdebian-installer4 | libnewt0.52 | libslang2 | libtextwrap1 | tzdata | libc-dev-bin | \
      rpcsvc-proto | readline-common | netbase | media-types | libselinux1 | libpcre2-8-0) ;;
    *) packages+=("$package") ;;
  esac
done
debs="$(mktemp -d "${TMPDIR:-/tmp}/arm64-debs.XXXXXX")"
trap 'rm -rf "$debs"' EXIT
chmod 777 "$debs"  # apt-get download drops privileges to _apt
(cd "$debs" && apt-get "${apt_options[@]}" download -q "${packages[@]}" >/dev/null)
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$dir"
done
# Debian 13's packages install under /usr only: /lib -> usr/lib (the dynamic loader's path) comes
# from base-files on a real system.
for top in lib bin; do
  [[ -e "$dir/$top" ]] || ln -s "usr/$top" "$dir/$top"
done
QEMU_LD_PREFIX="$dir" qemu-aarch64 "$dir/usr/bin/python$minor" -c \
  'import platform, sys; print("arm64_sysroot:", platform.machine(), sys.version.split()[0])'
