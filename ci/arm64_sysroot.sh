#!/usr/bin/env bash
# Unpacks Debian's arm64 CPython 3.11 (interpreter, standard library, headers) and the arm64 glibc
# it runs on into a folder, without installing anything arm64 into the system:
#
#   ci/arm64_sysroot.sh DIR
#
# DIR then serves as qemu-aarch64's library prefix (qemu-aarch64 -L DIR DIR/usr/bin/python3.11,
# or QEMU_LD_PREFIX=DIR) and as the source of the target's Python headers for the cross-compiled
# wheel (ci/build_old_glibc_wheels.sh). The packages are fetched with `apt-get download` after
# `dpkg --add-architecture arm64`: installing python3.11:arm64 itself would replace the host's
# amd64 python3.11 (the package is Multi-Arch: allowed, not same), so it is unpacked instead.
set -euo pipefail

dir="${1:?usage: arm64_sysroot.sh DIR}"
if [[ -x "$dir/usr/bin/python3.11" ]]; then
  echo "arm64_sysroot: $dir already holds python3.11"
  exit 0
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
  apt-get update -qq
fi
# python3.11-minimal, libpython3.11-stdlib and libpython3.11-dev with their run-time closure
# (apt-cache depends --recurse, less the tools a bare unpack does not need).
packages=(
  python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libpython3.11 libpython3.11-dev
  libc6 libc6-dev libgcc-s1 gcc-12-base libstdc++6 libcrypt1 libcrypt-dev linux-libc-dev
  libbz2-1.0 libdb5.3 libexpat1 libexpat1-dev libffi8 liblzma5 libncursesw6 libtinfo6
  libreadline8 libsqlite3-0 libssl3 libuuid1 libzstd1 zlib1g zlib1g-dev libnsl2 libnsl-dev
  libtirpc3 libtirpc-dev libgssapi-krb5-2 libkrb5-3 libkrb5support0 libk5crypto3 libkeyutils1
  libcom-err2
)
debs="$(mktemp -d "${TMPDIR:-/tmp}/arm64-debs.XXXXXX")"
trap 'rm -rf "$debs"' EXIT
chmod 777 "$debs"  # apt-get download drops privileges to _apt
(cd "$debs" && apt-get download -q "${packages[@]/%/:arm64}" >/dev/null)
mkdir -p "$dir"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$dir"
done
QEMU_LD_PREFIX="$dir" qemu-aarch64 "$dir/usr/bin/python3.11" -c \
  'import platform, sys; print("arm64_sysroot:", platform.machine(), sys.version.split()[0])'
