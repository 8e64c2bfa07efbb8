#!/usr/bin/env bash
# tensorb64.openai.patch() against the real client libraries, patched against unpatched in one
# process (tests/test_float64_rows.py, tests/test_openai_patch.py and tests/test_litellm_patch.py;
# tests/test_client_frameworks.py, marked `clients`):
#   1. openai 3.x with LangChain's OpenAIEmbeddings, LlamaIndex's OpenAIEmbedding and LiteLLM;
#   2. openai 2.x alone (the patch's own tests).
# Usage: ci/client_check.sh WHEEL (the tensorb64 wheel under test), or ci/client_check.sh --prepare
# (the venvs alone, no wheel needed: .ci/run builds them in the background).
# The venvs (~0.5 GB together) are kept in the cache folder (ci/check_lib.sh) and reused while
# their requirements are unchanged; on a fresh machine they are built (pip's cache is used where
# present). Fails on a failure, and on a skip (nothing here may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=false
if [[ ${1:?usage: ci/client_check.sh WHEEL | --prepare} == --prepare ]]; then prepare=true; else wheel=$(realpath "$1"); fi
source ci/check_lib.sh
python=${CLIENT_PYTHON:-python3.11}
common=(numpy "pytest>=7" pytest-timeout==2.4.0 orjson)
frameworks=(openai==3.57.0 langchain-openai==1.7.4 llama-index-embeddings-openai==0.7.0 litellm==1.110.2)
openai2=(openai==2.54.0)
install_frameworks() { "$1/bin/pip" install -q "${frameworks[@]}" "${common[@]}"; }
install_openai2() { "$1/bin/pip" install -q "${openai2[@]}" "${common[@]}"; }
venv3=$cache/client-venv
venv2=$cache/client-oa2-venv
cached_venv "$venv3" "$python" "${frameworks[*]} ${common[*]}" install_frameworks
cached_venv "$venv2" "$python" "${openai2[*]} ${common[*]}" install_openai2
if $prepare; then exit 0; fi
for venv in "$venv3" "$venv2"; do "$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel"; done

# LiteLLM reads its model cost map from its own package, not from the network.
export LITELLM_LOCAL_MODEL_COST_MAP=True
patch_tests=(tests/test_float64_rows.py tests/test_openai_patch.py tests/test_litellm_patch.py)
run_tests "openai 3.57" "$venv3/bin/python" "${patch_tests[@]}"
run_tests "the frameworks (openai 3.57)" "$venv3/bin/python" -m clients tests/test_client_frameworks.py
run_tests "openai 2.54" "$venv2/bin/python" "${patch_tests[@]}"
