#!/usr/bin/env bash
# tensorb64's line in LiteLLM's proxy config against the same proxy without it: real
# `litellm --config` processes (LiteLLM 1.110.2) in front of a local upstream answering vLLM's and
# OpenAI's bodies (tests/test_litellm_proxy_server.py), and the body against FastAPI's own rendering
# in one process with LiteLLM's types (tests/test_litellm_proxy_render.py), both marked `gateway`.
# Usage: ci/gateway_check.sh WHEEL (the tensorb64 wheel under test), or ci/gateway_check.sh --prepare
# (the venv alone, no wheel needed: .ci/run builds it in the background).
# The venv (~0.6 GB) is kept in the cache folder (ci/check_lib.sh) and reused while its
# requirements are unchanged. Fails on a failure, and on a skip.
#
# LiteLLM's `proxy` extra names a package of the same release (litellm-proxy) that PyPI does not
# have, so the venv holds LiteLLM and, beside it, the modules its proxy imports when it starts
# with a config of OpenAI-compatible deployments (found by starting it), at the releases tested.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=false
if [[ ${1:?usage: ci/gateway_check.sh WHEEL | --prepare} == --prepare ]]; then prepare=true; else wheel=$(realpath "$1"); fi
source ci/check_lib.sh
python=${GATEWAY_PYTHON:-python3.11}
requirements=(
  litellm==1.110.2 openai==3.60.0
  # what `litellm --config` imports (its proxy extra, less the package PyPI lacks)
  fastapi==0.165.0 starlette==1.10.0 uvicorn==0.55.0 uvloop==0.23.0 websockets==17.4 backoff==2.2.1 redis==8.2.0
  APScheduler==3.11.3 PyJWT==2.15.1 semver==3.1.2 python-multipart==0.0.34 Expression==5.8.0 fastapi-sso==0.23.0
  mcp==2.3.0 soundfile==0.14.0 orjson==3.13.0
  # the tests' own
  numpy "pytest>=7" pytest-timeout==2.4.0
)
install() { "$1/bin/pip" install -q "${requirements[@]}"; }
venv=$cache/gateway-venv
cached_venv "$venv" "$python" "${requirements[*]}" install
if $prepare; then exit 0; fi
"$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel"

# LiteLLM reads its model cost map from its own package, not from the network.
export LITELLM_LOCAL_MODEL_COST_MAP=True
run_tests "LiteLLM's proxy 1.110.2" "$venv/bin/python" -m gateway tests/test_litellm_proxy_server.py tests/test_litellm_proxy_render.py
