#!/usr/bin/env bash
# the release configuration: cibuildwheel --print-build-identifiers for each platform
source "$(dirname "$0")/lib.sh"
[[ -x $work/build-env/bin/cibuildwheel ]] || { echo "no build venv: run the stage 'build' first" >&2; exit 1; }
for platform_archs in "linux x86_64" "linux aarch64" "macos x86_64" "macos arm64" "windows AMD64"; do
  set -- $platform_archs
  echo "$1 $2: $("$work/build-env/bin/cibuildwheel" --print-build-identifiers --platform "$1" --archs "$2" | tr '\n' ' ')"
done
