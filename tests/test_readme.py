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


def _crossover_fpr(bits_for):
    """The largest false-positive rate, on a fine log grid from 10% down, at which the filter takes
    fewer bits per key than the best Bloom filter."""
    import cuckoo.theory as theory

    for k in range(0, 400):
        fpr = 0.1 * 10 ** (-k / 100)
        if bits_for(fpr) < theory.bloom_bits_per_item(fpr):
            return fpr
    raise AssertionError("no crossover above 1e-5")


def test_the_readme_compares_with_bloom_by_the_package_s_own_theory():
    # The intro's figures: a filter sized by fpr= with b = 4 (at the load it is sized for) against
    # the best Bloom filter, at 0.1% and 1%, and the rate where the two meet.
    import cuckoo.theory as theory

    text = " ".join(README.read_text(encoding="utf-8").split())

    def plain_bits(fpr):
        return theory.bits_per_item(theory.fingerprint_bits(fpr), theory.design_load(4))

    for fpr, pct in ((0.001, "0.1%"), (0.01, "1%")):
        ours, bloom = round(plain_bits(fpr), 1), round(theory.bloom_bits_per_item(fpr), 1)
        assert f"{ours} bits per key at {pct}" in text or f"{pct} it takes {ours} bits per key" in text
        assert f"{bloom}" in text
    crossover = _crossover_fpr(plain_bits)
    assert 0.0015 < crossover < 0.0025  # "the two meet at about 0.2%"
    assert "meet at about 0.2%" in text

    def semi_sorted_bits(fpr):
        f = theory.fingerprint_bits(fpr)
        return theory.bits_per_item(f, theory.design_load(4, semi_sort=True), semi_sort=True)

    assert f"{round(semi_sorted_bits(0.001), 1)} bits per key at 0.1%" in text
    assert f"and {round(semi_sorted_bits(0.01), 1)} at 1%" in text
    assert 0.017 < _crossover_fpr(semi_sorted_bits) < 0.019  # "at most rates below about 1.8%"
    assert "Bloom filter at most rates below about 1.8%" in text
