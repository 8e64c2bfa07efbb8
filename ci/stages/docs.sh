#!/usr/bin/env bash
# docs: the Sphinx site (docs/), API reference from the installed wheel's docstrings, warnings as errors
source "$(dirname "$0")/lib.sh"
wheel=$(built 'wheelhouse/*.whl' build)
fresh_venv "$work/docs-env" -r docs/requirements.txt "$wheel"
rm -rf "$work/docs-html"
# -W --keep-going: every warning fails the build, and all of them are listed first. -n: every
# cross-reference must resolve. Run from $work so that autodoc imports the installed package.
(cd "$work" && "$work/docs-env/bin/python" -m sphinx -W --keep-going -n -q -b html "$repo/docs" "$work/docs-html")
echo "built $work/docs-html/index.html"
