#!/usr/bin/env bash
# the clients: tensorb64.openai.patch() under openai 3.x and 2.x, LangChain, LlamaIndex and LiteLLM (ci/client_check.sh)
source "$(dirname "$0")/lib.sh"
ci/client_check.sh "$(built 'wheelhouse/*.whl' build)"
