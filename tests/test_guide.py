"""Every ```python and ```bash block of the user guide (docs/guide/*.md) runs as written.

A page is one test: its blocks run in the order written, in one fresh directory, so a later
block uses the files an earlier one made (as a reader following the page would). The Python
blocks of a page share one namespace, as the cells of a notebook do; bash blocks run with
`set -euo pipefail`, so a failing command or a failing `test` line fails the page, with the
`cuckoo` command of the interpreter running the tests first on PATH."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
PAGES = sorted(p for p in GUIDE.glob("*.md") if p.name != "index.md")
BLOCK = re.compile(r"^( *)```(python|bash)\n(.*?)^\1```", re.S | re.M)

# Pages whose examples need an optional package (all in the test extra): skipped without it.
NEEDS = {"dask.md": ("dask.dataframe", "pandas"), "fpr-experiments.md": ("matplotlib",),
         "dedup-files.md": ("pyarrow",)}


def _blocks(page: pathlib.Path):
    out = []
    for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
        indent, lang, body = m.groups()
        # a block inside a list item is indented: strip that indentation
        lines = [ln[len(indent):] if ln.startswith(indent) else ln for ln in body.splitlines()]
        out.append((lang, "\n".join(lines) + "\n"))
    return out


def test_the_guide_has_its_pages():
    names = {p.name for p in PAGES}
    for page in ("dedup-files.md", "exact-or-approximate.md", "daily-store.md", "dask.md",
                 "fpr-experiments.md", "errors.md"):
        assert page in names
    index = (GUIDE / "index.md").read_text(encoding="utf-8")
    for page in PAGES:  # every page is in the site's table of contents and linked for disk readers
        assert f"\n{page.stem}\n" in index and f"]({page.name})" in index
    for page in PAGES:
        assert _blocks(page), f"{page.name} has no runnable example"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_guide_page_runs_as_written(page, tmp_path, monkeypatch):
    for module in NEEDS.get(page.name, ()):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": f"guide_{page.stem}"}
    for index, (lang, code) in enumerate(_blocks(page)):
        where = f"{page.name} block {index} ({lang})"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)
        else:
            done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{where} failed (exit {done.returncode}):\n{code}\nstderr:\n{done.stderr}"


def test_the_supported_pythons_agree_everywhere():
    # docs/python-versions.md, requires-python, the classifiers and the wheel build name one range,
    # and .ci/run reads its oldest and newest from the same two places in pyproject.toml.
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    oldest = re.fullmatch(r">=3\.(\d+)", project["project"]["requires-python"])
    assert oldest, project["project"]["requires-python"]
    minors = sorted(int(c.rsplit(".", 1)[1]) for c in project["project"]["classifiers"]
                    if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert minors == list(range(int(oldest.group(1)), minors[-1] + 1))
    wheels = project["tool"]["cibuildwheel"]["build"].split()
    assert wheels == [f"cp3{m}-*" for m in minors]
    page = (ROOT / "docs" / "python-versions.md").read_text(encoding="utf-8")
    assert f"**CPython {', '.join(f'3.{m}' for m in minors[:-1])} and 3.{minors[-1]}.**" in page
    assert sys.version_info[:2] >= (3, minors[0]), "the suite runs on a Python the project does not support"
