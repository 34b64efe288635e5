"""examples/fpr_experiments.ipynb: stored clean, and runs headless end to end (notebook extra)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
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


def _readme_headless_command():
    """The command the README gives for running the notebook headless."""
    readme = (NOTEBOOK.parents[1] / "README.md").read_text(encoding="utf-8")
    lines = [ln for ln in readme.splitlines() if ln.startswith("jupyter nbconvert") and "--execute" in ln]
    assert len(lines) == 1, "the README gives one headless command for the notebook"
    return shlex.split(lines[0])


def test_notebook_runs_headless_with_the_readme_command(tmp_path):
    # The notebook extra's promise: the README's `jupyter nbconvert --execute` command runs the
    # whole notebook without a browser. Run exactly that command from the repository root, only
    # with the output sent to a temporary directory and a per-cell time limit that bounds the
    # whole run by TOTAL_SECONDS.
    for module in ("nbconvert", "nbclient", "ipykernel", "matplotlib"):
        pytest.importorskip(module)
    command = _readme_headless_command()
    assert command[:2] == ["jupyter", "nbconvert"]
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    per_cell = TOTAL_SECONDS // len(_code_cells(nb))
    result = subprocess.run(
        # `jupyter nbconvert` is `python -m nbconvert` launched through PATH: run the module with
        # this interpreter so the test does not depend on PATH.
        [sys.executable, "-m", *command[1:], "--output-dir", str(tmp_path), f"--ExecutePreprocessor.timeout={per_cell}"],
        cwd=NOTEBOOK.parents[1],
        capture_output=True,
        text=True,
        timeout=4 * TOTAL_SECONDS,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    executed = json.loads(next(tmp_path.glob("*.ipynb")).read_text(encoding="utf-8"))
    cells = _code_cells(executed)
    assert all(c["execution_count"] is not None for c in cells), "every code cell ran"
    errors = [o for c in cells for o in c["outputs"] if o.get("output_type") == "error"]
    assert errors == []
    # the three figures were drawn
    images = [o for c in cells for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert len(images) >= 3
