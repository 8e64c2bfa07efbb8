#!/usr/bin/env bash
# Lint: ruff on the Python sources (its configuration: [tool.ruff] in pyproject.toml) and
# clang-format on the C++ sources (.clang-format), which must already be formatted.
#   ci/lint.sh
# Environment: RUFF (default: ruff on PATH, else $PYTHON -m ruff), CLANG_FORMAT (default
# clang-format), PYTHON (default python3). Exits non-zero if either finds anything.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -n "${RUFF:-}" ]; then
  ruff=("$RUFF")
elif command -v ruff >/dev/null; then
  ruff=(ruff)
else
  ruff=("${PYTHON:-python3}" -m ruff)
fi
clang_format="${CLANG_FORMAT:-clang-format}"
if ! "${ruff[@]}" --version >/dev/null 2>&1; then
  echo "ci/lint.sh: ruff not found (pip install ruff)" >&2; exit 3
fi
if ! command -v "$clang_format" >/dev/null; then
  echo "ci/lint.sh: $clang_format not found (apt-get install clang-format)" >&2; exit 3
fi

status=0
echo "== ruff check ($("${ruff[@]}" --version))"
"${ruff[@]}" check . || status=1

echo "== clang-format --dry-run --Werror ($("$clang_format" --version))"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t cxx_sources < <(git ls-files '*.cpp' '*.hpp')
else  # an unpacked sdist
  mapfile -t cxx_sources < <(find cpp bindings -name '*.cpp' -o -name '*.hpp' | sort)
fi
"$clang_format" --dry-run --Werror "${cxx_sources[@]}" || status=1

[ $status = 0 ] && echo "ci/lint.sh: clean" || echo "ci/lint.sh: FAILED" >&2
exit $status
