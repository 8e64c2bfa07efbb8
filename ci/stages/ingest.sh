#!/usr/bin/env bash
# ingestion: tensorb64.ray, tensorb64.daft and tensorb64.arrow against Ray Data 2.60, Daft 0.7.26, pyarrow and LanceDB 0.40 (ci/ingest_check.sh)
source "$(dirname "$0")/lib.sh"
ci/ingest_check.sh "$(built 'wheelhouse/*.whl' build)"
