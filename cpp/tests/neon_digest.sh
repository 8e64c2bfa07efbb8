#!/usr/bin/env bash
# The neon level's float-text writers against the scalar level's over float32 bit patterns
# (all 2^32 by default): float_text_digest's chunk digests of the neon writers' texts, run under
# qemu-aarch64, compared with the scalar writers' digests, run natively (the scalar writers are the
# reference every level's must equal byte for byte; float_text_exhaustive checks texts against
# the oracle, which under qemu takes hours for the whole space).
#
#   neon_digest.sh NATIVE_PROGRAM AARCH64_PROGRAM THREADS [FIRST LAST]
#
# NATIVE_PROGRAM, AARCH64_PROGRAM: float_text_digest built for this machine and for aarch64
# (cmake -S cpp -B DIR -DTENSORB64_BUILD_TESTS=ON, natively and with aarch64-linux-gnu-g++ as in
# run_cross.sh; target float_text_digest). Prints the chunks whose digests differ, if any (rerun
# float_text_exhaustive --level neon under qemu on those patterns to see the texts), and exits
# non-zero then.
set -euo pipefail
native="${1:?usage: neon_digest.sh NATIVE_PROGRAM AARCH64_PROGRAM THREADS [FIRST LAST]}"
aarch64="${2:?usage: neon_digest.sh NATIVE_PROGRAM AARCH64_PROGRAM THREADS [FIRST LAST]}"
shift 2
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-digest.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$native" "$@" > "$work/scalar.txt"
qemu-aarch64 "$aarch64" --level neon "$@" > "$work/neon.txt"
if diff "$work/scalar.txt" "$work/neon.txt" > "$work/diff.txt"; then
  echo "neon_digest: $(wc -l < "$work/neon.txt") chunks of 2^20 patterns, the same texts as the scalar writers"
else
  echo "neon_digest: chunks whose texts differ from the scalar writers':" >&2
  grep '^>' "$work/diff.txt" >&2
  exit 1
fi
