#!/usr/bin/env bash
# the gateway: LiteLLM's proxy with and without tensorb64's line, byte for byte (ci/gateway_check.sh)
source "$(dirname "$0")/lib.sh"
ci/gateway_check.sh "$(built 'wheelhouse/*.whl' build)"
