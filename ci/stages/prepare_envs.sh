#!/usr/bin/env bash
# the integration tests' venvs (vLLM; SGLang; the client libraries; LiteLLM's proxy; the ingestion engines; built into TENSORB64_CI_CACHE, reused while their pins hold), no wheel needed
# I/O-bound (downloads): .ci/run starts it in the background beside the interpreter builds.
source "$(dirname "$0")/lib.sh"
ci/vllm_check.sh --prepare
ci/sglang_check.sh --prepare
ci/client_check.sh --prepare
ci/gateway_check.sh --prepare
ci/ingest_check.sh --prepare
