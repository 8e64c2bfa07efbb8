#!/usr/bin/env bash
# lint: ruff (pyproject.toml's [tool.ruff]), import-linter (its [tool.importlinter]: the Python layer's rooms) and clang-format (.clang-format)
source "$(dirname "$0")/lib.sh"
fresh_venv "$work/lint-env" "ruff==0.17.6" "import-linter==2.16"
RUFF="$work/lint-env/bin/ruff" LINT_IMPORTS="$work/lint-env/bin/lint-imports" ci/lint.sh
