"""examples/fpr_experiments.ipynb: stored clean, and runs headless end to end (notebook extra)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "fpr_experiments.ipynb"
TOTAL_SECONDS = 120  # the budget for the whole notebook


def _code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_notebook_is_stored_without_outputs():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    cells = _code_cells(nb)
    assert cells, "the notebook has no code"
    for cell in cells:
        assert cell["outputs"] == [], "commit the notebook without outputs"
        assert cell["execution_count"] is None
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    # it reproduces the three classic figures
    source = "\n".join("".join(c["source"]) for c in cells)
    for fn in ("plot_max_load", "plot_fpr_sweep", "plot_space"):
        assert f"plotting.{fn}(" in source


def test_notebook_runs_headless():
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")

    nb = nbformat.read(NOTEBOOK, as_version=4)
    # nbclient's timeout applies per cell: splitting the budget over the code cells bounds the
    # whole run by TOTAL_SECONDS (a cell that overruns raises CellTimeoutError)
    per_cell = TOTAL_SECONDS // len(_code_cells(nb))
    client = nbclient.NotebookClient(
        nb,
        timeout=per_cell,
        startup_timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()  # raises CellExecutionError on any error in a cell

    outputs = [o for c in _code_cells(nb) for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    images = [o for o in outputs if o["output_type"] == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 4  # load, fill, FPR (+ ratio), space
    html = [o for o in outputs if "text/html" in o.get("data", {})]
    assert any("cuckoo.Filter" in o["data"]["text/html"] for o in html)  # the filter's notebook display
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "measured / theory:" in text
