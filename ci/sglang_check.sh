#!/usr/bin/env bash
# The SGLang plugin against SGLang's own code:
#   1. a real `python -m sglang.launch_server` (SGLang 0.5.23 on its CPU engine) of a tiny random
#      Qwen3 embedding model made by the test, three servers (the plugin on, off, and on with two
#      HTTP workers), queried with the openai client (tests/test_sglang_server.py, marked `sglang`);
#   2. SGLang 0.5.23's response models and embeddings handler, and Dynamo 1.6.1's SGLang worker
#      encoder, read from their wheels (tests/test_sglang_plugin.py).
# Usage: ci/sglang_check.sh WHEEL (the tensorb64 wheel under test), or ci/sglang_check.sh --prepare (the venv only).
# The venv (~2.6 GB) is kept in the cache folder (ci/check_lib.sh) and reused while its
# requirements are unchanged; on a fresh machine it is built (pip's cache is used where present).
# The servers' temporary files go to a folder of their own, removed afterwards.
#
# SGLang is installed without its dependencies (most are CUDA builds: flashinfer, sgl-kernel,
# cutlass...), with those its server imports on the CPU beside it (pinned where SGLang pins them),
# torch kept at 2.13's CPU build by a constraint, and import-only stand-ins for the two that PyPI
# has only as CUDA builds, torchvision and sgl_kernel: they satisfy SGLang's module-level imports
# and nothing else (tests/support/sglang_server.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# --prepare: build (or reuse) the venv and fetch the pinned wheels below, then stop: no wheel of
# this package is needed for that, so CI runs it in the background while the wheel is built.
prepare_only=
[[ ${1:-} != --prepare ]] || prepare_only=1
[[ -n $prepare_only ]] || wheel=$(realpath "${1:?usage: sglang_check.sh WHEEL | --prepare}")
source ci/check_lib.sh
# SGLang 0.5.23 needs CPython >= 3.11; torch 2.13.0+cpu's wheel here is for 3.11.
python=${SGLANG_PYTHON:-python3.11}
venv=$cache/sglang-venv

sglang=sglang==0.5.23
requirements=(
  # what `python -m sglang.launch_server --is-embedding --device cpu` imports
  fastapi uvicorn uvloop orjson pydantic python-multipart "pyzmq>=25.1.2" psutil requests setproctitle numpy
  transformers==5.19.0 tokenizers==0.23.2 sentencepiece==0.2.1 pybase64 "prometheus-client>=0.20.0" pillow triton
  msgspec ipython aiohttp dill apache-tvm-ffi==0.1.11 compressed-tensors==0.18.0 gguf partial_json_parser einops
  jsonschema xgrammar==0.2.7 soundfile==0.13.1
  # the tests' own
  openai==2.8.0 "pytest>=7" pytest-timeout==2.4.0
)
# The constraint keeps pip from ever swapping torch for another build (a CUDA one is GBs).
constraint="torch==2.13.0+cpu"
install_sglang() {
  echo "$constraint" >"$cache/sglang-constraints.txt"
  "$1/bin/pip" install -q -c "$cache/sglang-constraints.txt" "$constraint" "${requirements[@]}"
  "$1/bin/pip" install -q --no-deps "$sglang"
}
cached_venv "$venv" "$python" "$sglang | ${requirements[*]} | $constraint" install_sglang
# (written each time: they are this repository's, and cost nothing)
"$venv/bin/python" -m tests.support.sglang_server stand-ins "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

# The wheels tests/test_sglang_plugin.py reads SGLang's and Dynamo's code from.
TENSORB64_SGLANG_WHEEL=$(fetched "$venv/bin/pip" sglang==0.5.23 'sglang-0.5.23-*.whl')
TENSORB64_DYNAMO_WHEEL=$(fetched "$venv/bin/pip" ai-dynamo==1.6.1 'ai_dynamo-1.6.1-*.whl')
export TENSORB64_SGLANG_WHEEL TENSORB64_DYNAMO_WHEEL
[[ -z $prepare_only ]] || { echo "prepared $venv"; exit 0; }
"$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel"

server_tmp=$(mktemp -d /tmp/tensorb64-sglang.XXXXXX)
trap 'rm -rf "$server_tmp"' EXIT
export TENSORB64_SGLANG_SERVER_TMP=$server_tmp

run_tests "SGLang 0.5.23 servers (CPU engine, a tiny model)" "$venv/bin/python" -m sglang tests/test_sglang_server.py
run_tests "SGLang 0.5.23 (its serving code and models; Dynamo 1.6.1's encoder)" "$venv/bin/python" tests/test_sglang_plugin.py
