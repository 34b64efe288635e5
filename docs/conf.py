# Sphinx configuration of cuckoo's documentation site: the guides in docs/*.md (Markdown, through
# MyST) and an API reference generated from the docstrings of the installed package.
# Build (CI does, with warnings as errors):  python -m sphinx -W --keep-going -b html docs build/docs
from __future__ import annotations

import cuckoo

project = "cuckoo"
author = "The cuckoo developers"
copyright = "2026, The cuckoo developers"
release = version = cuckoo.__version__

extensions = [
    "myst_parser",  # the guides are Markdown, also read on GitHub
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # the Python helpers' docstrings use NumPy-style sections
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "img/README*"]

# "[Integrity](#integrity)" style links between sections of a guide.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# The compiled module documents its signatures on the first docstring line (pybind11).
autodoc_docstring_signature = True
autodoc_default_options = {"members": True, "member-order": "bysource", "undoc-members": False}
autodoc_typehints = "signature"
# Type annotations name NumPy/typing aliases that have no page here; do not try to link them.
nitpicky = False

html_theme = "furo" if __import__("importlib").util.find_spec("furo") else "alabaster"
html_title = f"cuckoo {release}"
