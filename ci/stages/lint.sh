#!/usr/bin/env bash
# lint: ruff (pyproject.toml's [tool.ruff]) and clang-format (.clang-format)
source "$(dirname "$0")/lib.sh"
fresh_venv "$work/lint-env" "ruff==0.17.6"
RUFF="$work/lint-env/bin/ruff" ci/lint.sh
