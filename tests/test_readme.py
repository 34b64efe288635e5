"""Every ```python block of README.md runs exactly as written, each in a fresh namespace and a
fresh working directory (the blocks write files such as seen.cuckoo and users.ckv)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_its_python_blocks():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_as_written(index, tmp_path, monkeypatch):
    code = BLOCKS[index]
    if "cuckoo.dask" in code:
        pytest.importorskip("dask.dataframe")
        pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": f"readme_block_{index}"})
