#!/usr/bin/env bash
# SGLang: the plugin in real SGLang 0.5.23 servers on the CPU engine and against its serving code (ci/sglang_check.sh)
source "$(dirname "$0")/lib.sh"
ci/sglang_check.sh "$(built 'wheelhouse/*.whl' build)"
