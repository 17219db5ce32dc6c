"""Sphinx configuration of the puinfer documentation.

Build (from the repository root; fails on any warning):

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The vignettes (``vignettes/*.py``, jupytext percent-format scripts; linked into
``docs/vignettes/``) are executed at build time by myst-nb.
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# document and execute this checkout, whichever puinfer is installed
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                           if p)
# the notebook kernels inherit this environment: inline figures even when CI sets Agg
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
# small dense matrices: threaded BLAS only adds overhead on a shared machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# the kernels read their configuration from a fresh IPython profile: no history database, and
# only errors logged (ipykernel >= 7 logs a notice about its loopback TCP transport otherwise)
_ipython_dir = Path(tempfile.mkdtemp(prefix="puinfer-docs-ipython-"))
(_ipython_dir / "profile_default").mkdir()
(_ipython_dir / "profile_default" / "ipython_kernel_config.py").write_text(
    'c.IPKernelApp.log_level = "ERROR"\nc.HistoryManager.enabled = False\n')
os.environ["IPYTHONDIR"] = str(_ipython_dir)

import puinfer  # noqa: E402

project = "puinfer"
author = "the puinfer developers"
copyright = "2026, the puinfer developers"
version = release = puinfer.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "conf.py", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
root_doc = "index"

# -- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- notebooks: the vignettes, executed at every build ----------------------------------------
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = "force"
nb_execution_timeout = 900
nb_execution_raise_on_error = True  # a vignette that fails fails the build
nb_execution_in_temp = True  # the figures the vignettes save do not land in docs/
nb_execution_show_tb = True
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"puinfer {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
html_show_sourcelink = False
