"""Sphinx configuration of the documentation site. Build it from an environment where tensorb64 is
installed (the API reference is autodoc of the installed package's docstrings):

    pip install -r docs/requirements.txt . && python -m sphinx -W --keep-going -n -b html docs docs/_build/html

(CI: ci/stages/docs.sh, against the built wheel.)"""

import re

import tensorb64

project = "tensorb64"
release = version = tensorb64.__version__
copyright = "the tensorb64 authors"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "requirements.txt"]
root_doc = "index"

# Headings up to ### get anchors, so pages link to each other's sections (page.md#a-heading).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# The signatures as callers write them: the native functions carry theirs in __text_signature__.
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# The public names are re-exported from private modules; documented where a user finds them.
add_module_names = True

html_theme = "alabaster"
html_title = f"tensorb64 {release}"

# Type hints name numpy's and collections.abc's classes and the package's private typing module:
# no inventory of those is reachable offline, so they stay plain text rather than failing -n.
nitpick_ignore_regex = [("py:class", r"(numpy|np|collections\.abc|tensorb64\._\w+)\..+")]

# The docstrings are written for help(): one parameter a line, "name: what it is", its
# continuation lines under it (indented or not) up to the next parameter or a blank line.
# reStructuredText reads such a block as a broken definition list or one run-on paragraph, so
# each parameter is made a paragraph of its own, its continuation lines joined to it.
_PARAMETER = re.compile(r"^[a-z_][a-z_0-9]*(, [a-z_][a-z_0-9]*)*: \S")


def _parameters_as_paragraphs(app, what, name, obj, options, lines):
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _PARAMETER.match(line):
            if out and out[-1].strip():
                out.append("")
            block = [line]
            i += 1
            while i < len(lines) and lines[i].strip() and not _PARAMETER.match(lines[i]):
                block.append(lines[i].strip())
                i += 1
            out.append(" ".join(block))
            out.append("")
            continue
        out.append(line)
        i += 1
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _parameters_as_paragraphs)
