#!/usr/bin/env bash
# vLLM: the plugin against a real vllm serve (0.32, CPU build) and 0.33's response builder (ci/vllm_check.sh)
source "$(dirname "$0")/lib.sh"
ci/vllm_check.sh "$(built 'wheelhouse/*.whl' build)"
