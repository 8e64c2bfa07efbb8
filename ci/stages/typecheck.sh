#!/usr/bin/env bash
# type check: mypy on tests/support/typing_usage.py, the public API as callers use it
source "$(dirname "$0")/lib.sh"
fresh_venv "$work/typecheck-env" -r ci/typecheck-requirements.txt
"$work/typecheck-env/bin/python" -m mypy  # its configuration: [tool.mypy] in pyproject.toml
