#!/usr/bin/env bash
# interpreters: CPython 3.10/3.12/3.13 (pyenv); 3.14, 3.13t, 3.14t and a TSan 3.14t built from source (cached)
# CPU-bound (about 4.5 minutes a source build on 2 idle cores): .ci/run starts it in the
# background, niced, while the I/O-bound stages run, and waits for it before the wheels.
source "$(dirname "$0")/lib.sh"
ci/interpreters.sh 3.10 3.12 3.13 3.14 3.13t 3.14t 3.14t-tsan
