#!/usr/bin/env bash
# tensorb64.openai.patch() against the real client libraries, patched against unpatched in one
# process (tests/test_float64_rows.py, tests/test_openai_patch.py and tests/test_litellm_patch.py;
# tests/test_client_frameworks.py, marked `clients`):
#   1. openai 3.x with LangChain's OpenAIEmbeddings, LlamaIndex's OpenAIEmbedding and LiteLLM;
#   2. openai 2.x alone (the patch's own tests).
# Usage: ci/client_check.sh WHEEL (the tensorb64 wheel under test), or ci/client_check.sh --prepare
# (the venvs alone, no wheel needed: .ci/run builds them in the background).
# The venvs (~0.5 GB together) are kept in $TENSORB64_CI_CACHE (default /var/cache/tensorb64-ci)
# and reused while their requirements are unchanged; on a fresh machine they are built (pip's
# cache is used where present). Fails on a failure, and on a skip (nothing here may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=false
if [[ ${1:?usage: ci/client_check.sh WHEEL | --prepare} == --prepare ]]; then prepare=true; else wheel=$(realpath "$1"); fi
python=${CLIENT_PYTHON:-python3.11}
cache=${TENSORB64_CI_CACHE:-/var/cache/tensorb64-ci}
mkdir -p "$cache"
common=(numpy "pytest>=7" pytest-timeout==2.4.0 orjson)
frameworks=(openai==3.57.0 langchain-openai==1.7.4 llama-index-embeddings-openai==0.7.0 litellm==1.110.2)
openai2=(openai==2.54.0)

venv_for() {  # name, requirements...: the venv's path, built or reused (by its stamp)
  local venv=$cache/$1
  shift
  local stamp="$* | $($python -c 'import sys; print(sys.version.split()[0])')"
  if [[ ! -x $venv/bin/python || "$(cat "$venv/.tensorb64-requirements" 2>/dev/null)" != "$stamp" ]]; then
    echo "building $venv" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q "$@" >&2
    echo "$stamp" >"$venv/.tensorb64-requirements"
    echo "built $venv at $SECONDS s" >&2
  else
    echo "reusing $venv" >&2
  fi
  $prepare || "$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel" >&2
  echo "$venv"
}

log=$(mktemp /tmp/tensorb64-client.XXXXXX)
trap 'rm -f "$log"' EXIT
run_tests() {  # label, venv, pytest arguments...
  local label=$1 venv=$2
  shift 2
  # LiteLLM reads its model cost map from its own package, not from the network.
  LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$@" 2>&1 |
    tee "$log" | tail -15
  [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
  if grep -qE '[0-9]+ skipped' "$log"; then echo "$label: a test skipped" >&2; exit 1; fi
  echo "$label: $(grep -E '^[0-9]+ passed' "$log" | tail -1) (at $SECONDS s)"
}

venv3=$(venv_for client-venv "${frameworks[@]}" "${common[@]}")
venv2=$(venv_for client-oa2-venv "${openai2[@]}" "${common[@]}")
if $prepare; then exit 0; fi
run_tests "openai 3.57" "$venv3" tests/test_float64_rows.py tests/test_openai_patch.py tests/test_litellm_patch.py
run_tests "the frameworks (openai 3.57)" "$venv3" -m clients tests/test_client_frameworks.py
run_tests "openai 2.54" "$venv2" tests/test_float64_rows.py tests/test_openai_patch.py tests/test_litellm_patch.py
