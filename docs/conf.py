"""Sphinx configuration of the documentation site (``make docs``; tests/test_docs_site.py
builds it with warnings as errors, so a broken reference fails CI).

Sources: the Markdown pages of ``docs/`` (MyST), the API reference from the
docstrings (``api.md``, autodoc with Google-style sections), and the tutorials of
``tutorials/`` as a gallery (sphinx-gallery; not executed here: tests/test_tutorials.py
runs them).
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the repository whose code autodoc imports (the test suite builds a copy of docs/ and
#: tutorials/ elsewhere and points here)
ROOT = Path(os.environ.get("VTA_STACK_ROOT", HERE.parent))
sys.path.insert(0, str(ROOT))

project = "vta-stack"
author = "the vta-stack developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx_gallery.gen_gallery"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_tutorials/*.ipynb", "_tutorials/*.py", "_tutorials/*.json",
                    "_tutorials/*.zip", "_tutorials/*.md5"]
myst_heading_anchors = 3
autodoc_typehints = "none"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "tutorials"),
    "gallery_dirs": "_tutorials",
    "filename_pattern": r"^$",          # execute nothing: the test suite runs the tutorials
    "plot_gallery": "False",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
}
