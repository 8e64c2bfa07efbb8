#!/usr/bin/env bash
# The ingestion adapters against the real engines (tests/test_ingest.py, marked `ingest`):
# tensorb64.ray.EmbeddingClient on a local Ray cluster of 2 CPUs, tensorb64.daft.embed_text on
# Daft's native runner, tensorb64.arrow's columns written to Parquet and LanceDB, against a local
# server on 127.0.0.1, through the standard library's connections and through a user's httpx
# client; and the shared HTTP client's own tests (tests/test_embeddings_http.py) there.
# Usage: ci/ingest_check.sh WHEEL (the tensorb64 wheel under test), or ci/ingest_check.sh --prepare
# (the venv alone, no wheel needed: .ci/run builds it in the background).
# The venv (~0.9 GB: Ray's wheel is most of it; no torch, none of these pulls one in) is kept in
# the cache folder (ci/check_lib.sh) and reused while its requirements are unchanged. Fails on a
# failure, and on a skip (nothing here may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=false
if [[ ${1:?usage: ci/ingest_check.sh WHEEL | --prepare} == --prepare ]]; then prepare=true; else wheel=$(realpath "$1"); fi
source ci/check_lib.sh
python=${INGEST_PYTHON:-python3.11}
# pyarrow 25.0.1: what ray 2.60, daft 0.7.26 and lancedb 0.40 resolve to together. httpx and
# httpx2 (openai 3's fork): the clients a user may give the adapters (http_client).
engines=("ray[data]==2.60.0" daft==0.7.26 lancedb==0.40.0 pyarrow==25.0.1)
common=(numpy "pytest>=7" pytest-timeout==2.4.0 httpx==0.29.0 httpx2==2.16.2)
install_engines() { "$1/bin/pip" install -q "${engines[@]}" "${common[@]}"; }
venv=$cache/ingest-venv
cached_venv "$venv" "$python" "${engines[*]} ${common[*]}" install_engines
if $prepare; then exit 0; fi
"$venv/bin/pip" install -q --no-deps --force-reinstall "$wheel"

# Ray's workers start from the driver's environment: no usage reports, no dashboard, a small object store.
export RAY_USAGE_STATS_ENABLED=0 RAY_DISABLE_IMPORT_WARNING=1 DAFT_PROGRESS_BAR=0 DO_NOT_TRACK=1
run_tests "ingest (ray 2.60, daft 0.7.26, lancedb 0.40)" "$venv/bin/python" -m ingest tests/test_ingest.py
run_tests "the HTTP client (ingest venv)" "$venv/bin/python" tests/test_embeddings_http.py
