"""Executes every notebook in this folder headless (nbclient) and fails on
the first cell that raises. Outputs are not written back: notebooks stay
committed without outputs.

    STORMSIM_DATA=... STORMSIM_AFTER=... python notebooks/execute.py [NOTEBOOK ...]

Each notebook reads its input from environment variables (see its first
cell); NOTEBOOK_ENV_<name>=VAR=VALUE,... gives one notebook its own.
"""

import glob
import os
import sys

import nbformat
from nbclient import NotebookClient

here = os.path.dirname(os.path.abspath(__file__))
names = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "*.ipynb")))
for path in names:
    nb = nbformat.read(path, as_version=4)
    stem = os.path.splitext(os.path.basename(path))[0]
    extra = os.environ.get("NOTEBOOK_ENV_" + stem.replace("-", "_"), "")
    saved = dict(os.environ)
    for pair in filter(None, extra.split(",")):
        key, value = pair.split("=", 1)
        os.environ[key] = value
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": here}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print(f"{stem}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells ran")
