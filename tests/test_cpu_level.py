"""The kernel level (issue 29): which copies of the bulk kernels run, CUCKOO_CPU, and the level
switch the every_cpu_level tests use (conftest.py). The kernels themselves are checked against the
scalar code at every level by the property tests marked every_cpu_level and by cpp/tests."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import cuckoo

LEVELS = ("portable", "avx2", "avx512")


def run_python(code: str, cpu: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("CUCKOO_CPU", None)
    if cpu is not None:
        env["CUCKOO_CPU"] = cpu
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_levels_of_this_cpu():
    levels = cuckoo.cpu_levels()
    # Lowest first, a prefix of the ordered levels: a CPU that runs a level runs those below it.
    assert levels == LEVELS[: len(levels)] and levels[0] == "portable"
    assert cuckoo.cpu_level() in levels


@pytest.mark.parametrize("level", cuckoo.cpu_levels())
def test_cuckoo_cpu_chooses_the_level(level):
    proc = run_python("import cuckoo; print(cuckoo.cpu_level())", level)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == level
    assert proc.stderr == ""


def test_without_cuckoo_cpu_the_best_level_runs():
    proc = run_python("import cuckoo; print(cuckoo.cpu_level())", None)
    assert proc.stdout.strip() == cuckoo.cpu_levels()[-1]


@pytest.mark.parametrize("value", ["avx3", "AVX2", "", "native"])
def test_an_unknown_cuckoo_cpu_fails_the_import(value):
    proc = run_python("import cuckoo", value)
    assert proc.returncode != 0
    assert f"ImportError: CUCKOO_CPU={value!r} is not a kernel level: use portable, avx2 or avx512" in proc.stderr


@pytest.mark.parametrize("how", ["module", "script"])
def test_an_unknown_cuckoo_cpu_is_one_line_and_exit_1_on_the_command_line(tmp_path, how):
    # The CLI's table of exit codes (cuckoo dedup --help): 1, usage; never a traceback.
    env = dict(os.environ, CUCKOO_CPU="avx3")
    if how == "module":
        cmd = [sys.executable, "-m", "cuckoo", "dedup", "--help"]
    else:  # what pip's console script runs
        script = tmp_path / "cuckoo"
        script.write_text("import sys\nfrom cuckoo.cli import main\nsys.exit(main())\n")
        cmd = [sys.executable, str(script), "dedup", "--help"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "cuckoo: CUCKOO_CPU='avx3' is not a kernel level: use portable, avx2 or avx512, or unset it\n"
    assert proc.stdout == ""


def test_a_level_the_cpu_lacks_warns_and_runs_the_best(monkeypatch):
    # This machine may have every level: the core's answer for a CPU without AVX-512 is
    # simulated (the core's own decision is tested in cpp/tests/test_filter.cpp).
    monkeypatch.setattr(cuckoo._core, "_cpu_level_request", lambda: ("avx512", "unsupported"))
    with pytest.warns(RuntimeWarning, match=r"CUCKOO_CPU='avx512': this CPU cannot run that kernel level; running '"):
        cuckoo._check_cpu_request()
    monkeypatch.setattr(cuckoo._core, "_cpu_level_request", lambda: ("x", "unknown"))
    with pytest.raises(ImportError, match="CUCKOO_CPU='x' is not a kernel level"):
        cuckoo._check_cpu_request()
    monkeypatch.setattr(cuckoo._core, "_cpu_level_request", lambda: ("avx2", "obeyed"))
    cuckoo._check_cpu_request()  # nothing to say


def test_set_cpu_level_refuses_unknown_levels():
    before = cuckoo.cpu_level()
    with pytest.raises(ValueError, match="unknown kernel level 'sse4'"):
        cuckoo._core._set_cpu_level("sse4")
    assert cuckoo.cpu_level() == before


def test_every_level_gives_the_same_answers_on_a_larger_batch():
    """Many blocks of keys (the property tests' batches are small), integer and string keys."""
    rng = np.random.default_rng(29)
    ints = rng.integers(0, 2**63, size=20_000, dtype=np.int64)
    strs = np.array([f"key {x}" for x in ints[:5000]], dtype="U")
    results = {}
    before = cuckoo.cpu_level()
    try:
        for level in cuckoo.cpu_levels():
            cuckoo._core._set_cpu_level(level)
            f = cuckoo.Filter(30_000, fingerprint_bits=8, seed=5)
            new = f.add_unique_many(ints[:15_000])
            f.add_many(strs)
            results[level] = (new.tolist(), f.to_bytes(), f.contains_many(ints).tolist(),
                              f.count_many(strs).tolist(), f.discard_many(ints[::3]).tolist(), f.to_bytes())
    finally:
        cuckoo._core._set_cpu_level(before)
    first = results[cuckoo.cpu_levels()[0]]
    for level, r in results.items():
        assert r == first, level
