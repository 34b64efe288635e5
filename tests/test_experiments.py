"""cuckoo.experiments and cuckoo.plotting: measured false-positive rates against the theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cuckoo
from cuckoo import experiments, theory

SWEEP_COLUMNS = [
    "fingerprint_bits", "bucket_size", "load", "measured_fpr", "ci_low", "ci_high", "expected_fpr",
    "fpr_bound", "bits_per_item", "bloom_bits_per_item", "lower_bound_bits",
]


@pytest.fixture(scope="module")
def default_sweep():
    """The issue's table: f = 4..16, b = 2, 4, 8 at loads 0.84 / 0.95 / 0.98 (~2 s)."""
    return experiments.fpr_sweep(as_frame=False)


# ---- wilson_interval -------------------------------------------------------------------------


def test_wilson_interval_known_values():
    low, high = experiments.wilson_interval(10, 100)
    assert low == pytest.approx(0.05523, abs=5e-5)
    assert high == pytest.approx(0.17437, abs=5e-5)
    low, high = experiments.wilson_interval(0, 1000)
    assert low == 0.0 and high == pytest.approx(0.003827, abs=5e-6)  # z^2 / (n + z^2)
    low, high = experiments.wilson_interval(50, 50)
    assert high == 1.0 and 0.9 < low < 1.0


def test_wilson_interval_properties():
    for n in (1, 7, 100, 10**6):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            lo95, hi95 = experiments.wilson_interval(k, n)
            lo99, hi99 = experiments.wilson_interval(k, n, confidence=0.99)
            assert 0.0 <= lo99 <= lo95 <= k / n <= hi95 <= hi99 <= 1.0
    # narrower with more trials
    assert np.diff(experiments.wilson_interval(100, 10**4)) < np.diff(experiments.wilson_interval(10, 10**3))


@pytest.mark.parametrize(
    "args, exc",
    [((1, 0), ValueError), ((-1, 10), ValueError), ((11, 10), ValueError), ((1, 10, 1.0), ValueError),
     ((1, 10, 0.0), ValueError), ((1, 10.0), TypeError)],
)
def test_wilson_interval_bad_input(args, exc):
    with pytest.raises(exc):
        experiments.wilson_interval(*args)


# ---- measure_fpr -------------------------------------------------------------------------------


def test_measure_fpr_empty_filter_has_no_false_positives():
    flt = cuckoo.Filter(1000, fingerprint_bits=4)
    m = experiments.measure_fpr(flt, 10_000)
    assert (m.false_positives, m.negatives, m.measured_fpr, m.expected_fpr, m.load) == (0, 10_000, 0.0, 0.0, 0.0)
    assert m.ci_low == 0.0 < m.ci_high < 1e-3
    assert m.fpr_bound == theory.fpr_bound(4, 4)


def test_measure_fpr_count_equals_the_documented_keys():
    flt = cuckoo.Filter(20_000, fingerprint_bits=8, seed=3)
    flt.add_many(np.arange(18_000))
    n = (1 << 20) + 777  # spans two generation chunks
    by_count = experiments.measure_fpr(flt, n)
    keys = np.arange(n, dtype=np.int64) + np.int64(experiments.NEGATIVE_KEYS_START)
    by_array = experiments.measure_fpr(flt, keys)
    assert by_count == by_array
    assert by_count.false_positives == int(np.count_nonzero(flt.contains_many(keys)))
    # the generated keys are absent: distinct from every inserted (non-negative) integer
    assert keys.max() < 0
    # with ~1.5% expected, a million keys measure it to a few percent
    assert by_count.ci_low <= by_count.expected_fpr <= by_count.ci_high
    assert 0.9 < by_count.ratio < 1.1
    assert by_count.load == flt.load_factor
    assert by_count.expected_fpr == flt.expected_fpr


def test_measure_fpr_takes_any_bulk_input_and_leaves_filter_unchanged():
    flt = cuckoo.Filter(5000, fingerprint_bits=6, seed=1)
    flt.add_many([f"key{i}" for i in range(4000)])
    before = flt.copy()
    strings = [f"absent{i}" for i in range(20_000)]
    m_list = experiments.measure_fpr(flt, strings)
    m_arr = experiments.measure_fpr(flt, np.array(strings))
    assert m_list == m_arr
    assert m_list.negatives == 20_000
    assert m_list.false_positives == sum(s in flt for s in strings)
    assert flt == before and len(flt) == 4000
    # present keys count as hits: the caller guarantees absence
    assert experiments.measure_fpr(flt, [f"key{i}" for i in range(100)]).false_positives == 100


def test_measure_fpr_result_helpers():
    flt = cuckoo.Filter(5000, fingerprint_bits=5, seed=2)
    flt.add_many(range(4500))
    m = experiments.measure_fpr(flt, 50_000, confidence=0.99)
    d = m.as_dict()
    assert d["ratio"] == m.ratio == m.measured_fpr / m.expected_fpr
    assert d["confidence"] == 0.99
    assert set(d) >= {"measured_fpr", "negatives", "false_positives", "ci_low", "ci_high", "expected_fpr", "fpr_bound"}
    assert "50,000 absent keys" in str(m) and "99% CI" in str(m)


@pytest.mark.parametrize(
    "negatives, exc, match",
    [(0, ValueError, "positive"), (-5, ValueError, "positive"), ([], ValueError, "empty"),
     ("abc", TypeError, "single key"), (b"abc", TypeError, "single key"), (2.5, TypeError, "not float"),
     (True, TypeError, "not bool")],
)
def test_measure_fpr_bad_input(negatives, exc, match):
    flt = cuckoo.Filter(100)
    with pytest.raises(exc, match=match):
        experiments.measure_fpr(flt, negatives)


def test_measure_fpr_needs_a_filter():
    with pytest.raises(TypeError, match="cuckoo.Filter"):
        experiments.measure_fpr({1, 2, 3}, 100)


# ---- fill_curve, max_load_sweep ------------------------------------------------------------------


@pytest.mark.parametrize("b", [2, 4, 8])
def test_fill_curve(b):
    c = experiments.fill_curve(20_000, fingerprint_bits=12, bucket_size=b, steps=25, seed=5)
    assert (c.fingerprint_bits, c.bucket_size, c.max_kicks, c.seed) == (12, b, 500, 5)
    assert c.slot_count == cuckoo.Filter(20_000, fingerprint_bits=12, bucket_size=b).slot_count
    rows = c.rows
    loads = c.column("load")
    assert np.all(np.diff(loads) > 0)
    assert [r["failed"] for r in rows] == [False] * (len(rows) - 1) + [True]
    assert c.load_at_failure == rows[-1]["load"] == rows[-1]["items"] / c.slot_count
    assert sum(r["inserted"] for r in rows) == rows[-1]["items"]
    per_step = math.ceil(c.slot_count / 25)
    assert all(r["inserted"] == per_step for r in rows[:-1]) and rows[-1]["inserted"] < per_step
    # filling reaches past the design load, and the eviction work grows steeply before failure
    assert c.load_at_failure > theory.design_load(b)
    for key in ("kicked_fraction", "moves_per_insert", "buckets_searched_per_insert"):
        col = c.column(key)
        assert np.all(col >= 0)
        assert col[0] == 0.0 or b == 2  # an almost empty table needs no kicks
        assert col[-2] > col[len(col) // 2]
    assert np.all(c.column("kicked_fraction") <= 1.0)
    # the last step includes the failed insert's search, which visits max_kicks buckets or more
    assert rows[-1]["buckets_searched_per_insert"] * (rows[-1]["inserted"] + 1) >= 500
    assert "first failure at load" in str(c)


def test_fill_curve_counters_match_a_replay():
    """The per-step deltas add up to the stats of a filter that saw the same keys."""
    c = experiments.fill_curve(5_000, fingerprint_bits=10, bucket_size=4, steps=10, seed=9)
    flt = cuckoo.Filter(5_000, fingerprint_bits=10, bucket_size=4, seed=9)
    with pytest.raises(cuckoo.FilterFullError) as info:
        flt.add_many(np.arange(flt.slot_count + 1, dtype=np.uint64))
    assert info.value.inserted == len(flt) == c.rows[-1]["items"]
    s = flt.stats()
    attempts = [r["inserted"] + r["failed"] for r in c.rows]
    moves = sum(r["moves_per_insert"] * a for r, a in zip(c.rows, attempts))
    kicked = sum(r["kicked_fraction"] * a for r, a in zip(c.rows, attempts))
    searched = sum(r["buckets_searched_per_insert"] * a for r, a in zip(c.rows, attempts))
    assert round(moves) == s["moves"] and round(kicked) == s["kicked_inserts"]
    assert round(searched) == s["buckets_searched"]


def test_fill_curve_table_and_errors():
    c = experiments.fill_curve(2_000, 8, 4, steps=5)
    assert c.table(as_frame=False) == c.rows
    with pytest.raises(KeyError, match="no column"):
        c.column("nope")
    with pytest.raises(ValueError, match="steps must be positive"):
        experiments.fill_curve(1000, steps=0)
    with pytest.raises(ValueError, match="start"):
        experiments.fill_curve(1000, start=-1)
    with pytest.raises(ValueError, match="bucket_size"):
        experiments.fill_curve(1000, bucket_size=3)


def test_max_load_sweep():
    rows = experiments.max_load_sweep((4, 16), (2, 4), capacity=20_000, repeats=2, as_frame=False)
    assert len(rows) == 2 * 2 * 2
    assert len({r["seed"] for r in rows}) == len(rows)
    for r in rows:
        assert 0.3 < r["load_at_failure"] <= 1.0
        if r["fingerprint_bits"] == 16:
            assert r["load_at_failure"] > theory.max_load(r["bucket_size"])


# ---- fpr_sweep -----------------------------------------------------------------------------------


def test_fpr_sweep_must_show(default_sweep):
    """Issue 7: f = 4..16, b = 2, 4, 8 at 95% load (b = 4; 84% and 98% for b = 2 and 8): every
    measured FPR within 1.25x of the theory at the load reached."""
    rows = default_sweep
    assert [(r["bucket_size"], r["fingerprint_bits"]) for r in rows] == [
        (b, f) for b in (2, 4, 8) for f in range(4, 17)
    ]
    for r in rows:
        assert r["expected_fpr"] == theory.expected_fpr(r["fingerprint_bits"], r["bucket_size"], r["load"])
        assert 1 / 1.25 <= r["measured_fpr"] / r["expected_fpr"] <= 1.25, r
        # statistically meaningful: hundreds of false positives in every row
        assert r["false_positives"] >= 150, r


def test_fpr_sweep_loads(default_sweep):
    for r in default_sweep:
        target = experiments.SWEEP_LOADS[r["bucket_size"]]
        assert r["target_load"] == target
        assert r["load"] == r["items"] / r["slot_count"]
        if r["reached_target"]:
            assert target - 1e-12 <= r["load"] < target + 2 / r["slot_count"]
        else:  # failed first: the load actually reached is recorded, and the theory is taken there
            assert r["load"] < target
    # long enough fingerprints reach the target; 4- and 5-bit ones may not (measured over 40 seeds:
    # only f = 4 and f = 5 ever stopped short; b = 2, f = 4 always did, at loads of 32-74%)
    assert all(r["reached_target"] for r in default_sweep if r["fingerprint_bits"] >= 6)
    assert not next(r for r in default_sweep if (r["bucket_size"], r["fingerprint_bits"]) == (2, 4))["reached_target"]


def test_fpr_sweep_statistics(default_sweep):
    for r in default_sweep:
        n, k = r["negatives"], r["false_positives"]
        assert r["measured_fpr"] == k / n
        assert (r["ci_low"], r["ci_high"]) == experiments.wilson_interval(k, n)
        # the sharper model matches to within 4.5 standard deviations everywhere, also for f = 4
        e = r["exact_fpr"]
        assert abs(k - n * e) <= 4.5 * math.sqrt(n * e * (1 - e)), r
    # ... whereas the core's formula is pessimistic by ~3% for 4-bit fingerprints, which 10^5
    # lookups resolve (measured 20 seeds: 4-8 standard deviations)
    for r in default_sweep:
        if r["fingerprint_bits"] == 4:
            assert r["measured_fpr"] < r["expected_fpr"]


def test_fpr_sweep_space_columns(default_sweep):
    for r in default_sweep:
        f, b = r["fingerprint_bits"], r["bucket_size"]
        assert r["bits_per_item"] == pytest.approx(theory.bits_per_item(f, r["load"]), rel=1e-3)
        assert r["fpr_bound"] == theory.fpr_bound(f, b)
        assert r["lower_bound_bits"] == pytest.approx(-math.log2(r["measured_fpr"]))
        assert r["bloom_bits_per_item"] == pytest.approx(r["lower_bound_bits"] / math.log(2))
    # the paper's comparison: at 95% load and b = 4, 12 or more bits beat a Bloom filter of equal FPR
    for r in default_sweep:
        if r["bucket_size"] == 4 and r["fingerprint_bits"] >= 12:
            assert r["bits_per_item"] < r["bloom_bits_per_item"]
        if r["bucket_size"] == 4 and r["fingerprint_bits"] <= 8:
            assert r["bits_per_item"] > r["bloom_bits_per_item"]


def test_fpr_sweep_options():
    rows = experiments.fpr_sweep((6, 10), (4,), load=0.5, n_negatives=50_000, capacity=10_000, seed=3, as_frame=False)
    assert [r["fingerprint_bits"] for r in rows] == [6, 10]
    assert all(r["negatives"] == 50_000 and r["reached_target"] and 0.5 <= r["load"] < 0.501 for r in rows)
    assert set(SWEEP_COLUMNS) <= set(rows[0])
    assert list(rows[0])[: len(SWEEP_COLUMNS)] == SWEEP_COLUMNS
    rows = experiments.fpr_sweep((8,), (2, 8), load={2: 0.3, 8: 0.6}, n_negatives=10_000, capacity=5_000, as_frame=False)
    assert [round(r["load"], 2) for r in rows] == [0.3, 0.6]
    with pytest.raises(ValueError, match="no target for bucket_size=4"):
        experiments.fpr_sweep((8,), (4,), load={2: 0.5})
    with pytest.raises(ValueError, match="load must be in"):
        experiments.fpr_sweep((8,), (4,), load=1.5)
    with pytest.raises(ValueError, match="n_negatives must be positive"):
        experiments.fpr_sweep((8,), (4,), n_negatives=0)
    with pytest.raises(ValueError, match="fingerprint_bits"):
        experiments.fpr_sweep((3,), (4,), n_negatives=10)


def test_fpr_sweep_deterministic():
    a = experiments.fpr_sweep((8,), (4,), n_negatives=20_000, capacity=5_000, seed=11, as_frame=False)
    b = experiments.fpr_sweep((8,), (4,), n_negatives=20_000, capacity=5_000, seed=11, as_frame=False)
    c = experiments.fpr_sweep((8,), (4,), n_negatives=20_000, capacity=5_000, seed=12, as_frame=False)
    assert a == b
    assert a[0]["false_positives"] != c[0]["false_positives"]


def test_tables_as_pandas():
    pd = pytest.importorskip("pandas")
    df = experiments.fpr_sweep((8, 9), (4,), n_negatives=10_000, capacity=5_000)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns[: len(SWEEP_COLUMNS)]) == SWEEP_COLUMNS and len(df) == 2
    assert isinstance(experiments.max_load_sweep((8,), (4,), capacity=2_000, repeats=1), pd.DataFrame)
    assert isinstance(experiments.fill_curve(2_000, steps=4).table(), pd.DataFrame)
    assert "measured_fpr" in experiments.format_table(df)


def test_format_table():
    text = experiments.format_table([{"a": 1, "b": 0.5, "c": 1e-5, "d": True, "e": "x"}, {"a": 1234, "b": 2.0, "c": 0.0, "d": False, "e": "yy"}])
    lines = text.splitlines()
    assert lines[0].split() == ["a", "b", "c", "d", "e"]
    assert lines[1].split() == ["1", "0.5", "1.000e-05", "yes", "x"]
    assert lines[2].split() == ["1,234", "2", "0", "no", "yy"]
    assert experiments.format_table([]) == "(empty)"


# ---- plotting ------------------------------------------------------------------------------------


@pytest.fixture
def plt():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def _legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_plot_fpr_sweep_and_ratio(plt, default_sweep):
    from cuckoo import plotting

    ax = plotting.plot_fpr_sweep(default_sweep)
    assert ax.get_yscale() == "log"
    assert "fingerprint" in ax.get_xlabel() and "bits" in ax.get_xlabel()
    assert "false-positive rate" in ax.get_ylabel() and ax.get_title()
    texts = _legend_texts(ax)
    for b in (2, 4, 8):
        assert any(t.startswith(f"b = {b}: measured") for t in texts)
        assert any(t.startswith(f"b = {b}: theory at load") for t in texts)
    assert any("2b / 2^f" in t for t in texts)
    assert "55%-84%" in " ".join(texts)  # b = 2, f = 4 stops early: the label says so
    # theory lines go through the expected values
    line = next(l for l in ax.get_lines() if l.get_label() == "b = 4: theory at load 95%")
    assert np.allclose(line.get_ydata(), [r["expected_fpr"] for r in default_sweep if r["bucket_size"] == 4])

    ax = plotting.plot_fpr_ratio(default_sweep)
    assert "measured / theoretical" in ax.get_ylabel()
    assert ax.get_ylim()[0] <= 0.8 and ax.get_ylim()[1] >= 1.25


def test_plot_space(plt, default_sweep):
    from cuckoo import plotting

    ax = plotting.plot_space(sweep=default_sweep)
    assert ax.get_xscale() == "log" and ax.xaxis_inverted()
    assert ax.get_ylabel() == "bits per item" and "false-positive rate" in ax.get_xlabel()
    texts = " | ".join(_legend_texts(ax))
    assert "Bloom" in texts and "lower bound" in texts and "measured" in texts and "sized for target" in texts
    bloom = next(l for l in ax.get_lines() if l.get_label().startswith("Bloom"))
    x, y = bloom.get_xdata(), bloom.get_ydata()
    assert np.allclose(y, np.log2(1 / x) / np.log(2))
    with pytest.raises(ValueError, match="fpr_range"):
        plotting.plot_space(fpr_range=(0.1, 0.01))


def test_plot_load_and_fill(plt):
    from cuckoo import plotting

    loads = experiments.max_load_sweep((6, 12), (2, 4), capacity=5_000, repeats=2)
    ax = plotting.plot_max_load(loads)
    assert "load factor" in ax.get_ylabel() and "%" in ax.get_ylabel()
    assert any("design load" in t for t in _legend_texts(ax))
    curves = [experiments.fill_curve(5_000, 12, b, steps=10) for b in (2, 4)]
    ax = plotting.plot_fill_curve(curves, metric="moves_per_insert")
    assert ax.get_yscale() == "log" and "moved per insert" in ax.get_ylabel()
    assert len(_legend_texts(ax)) == 2
    ax = plotting.plot_fill_curve(curves[0])
    assert "buckets searched" in ax.get_ylabel()
    with pytest.raises(ValueError, match="metric"):
        plotting.plot_fill_curve(curves, metric="speed")
    with pytest.raises(ValueError, match="empty"):
        plotting.plot_fpr_sweep([])
    with pytest.raises(ValueError, match="lacks column"):
        plotting.plot_fpr_sweep([{"fingerprint_bits": 8}])
    # draws into a given Axes
    fig, ax = plt.subplots()
    assert plotting.plot_max_load(loads, ax=ax) is ax


# ---- notebook display --------------------------------------------------------------------------


def test_repr_html_is_compact_correct_and_escaped():
    flt = cuckoo.Filter(100_000, fpr=0.001, seed=42)
    flt.add_many(range(50_000))
    html = flt._repr_html_()
    assert html.startswith("<table") and html.endswith("</table>")
    assert "50,000 of capacity 100,000" in html
    assert f"{flt.load_factor:.1%}" in html and "13 bits" in html
    assert f"{flt.bucket_count:,} \u00d7 4 slots" in html
    assert f"{flt.expected_fpr:.3g}" in html and "42, 500" in html
    assert "read-only" not in html
    assert html.count("<tr>") == 7 and len(html) < 1500
    r = repr(flt)
    assert r.startswith("<cuckoo.Filter 50,000/100,000 items") and "f=13 b=4" in r


def test_repr_html_escapes(monkeypatch):
    from cuckoo import _display

    monkeypatch.setattr(_display, "_rows", lambda f: [("<b>", "a & b")])
    html = _display.filter_repr_html(object())
    assert "&lt;b&gt;" in html and "a &amp; b" in html and "<b>" not in html.replace("<b>cuckoo.Filter</b>", "")


def test_docstring_examples():
    import doctest

    assert doctest.testmod(experiments).failed == 0


def test_import_does_not_load_matplotlib_or_pandas():
    import subprocess
    import sys

    code = (
        "import sys, cuckoo, cuckoo.theory, cuckoo.experiments, cuckoo.plotting\n"
        "bad = [m for m in ('matplotlib', 'pandas') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- several capacities (issue 48: a sweep over filter sizes, and a plot that tells them apart) --


def test_fpr_sweep_over_capacities():
    rows = experiments.fpr_sweep((6, 8), (2, 4), n_negatives=20_000, capacity=(1_000, 8_000), seed=5, as_frame=False)
    assert [(r["capacity"], r["bucket_size"], r["fingerprint_bits"]) for r in rows] == [
        (c, b, f) for c in (1_000, 8_000) for b in (2, 4) for f in (6, 8)]
    for r in rows:  # each row's filter is the one its capacity asks for
        assert r["slot_count"] == cuckoo.Filter(r["capacity"], fingerprint_bits=r["fingerprint_bits"],
                                                bucket_size=r["bucket_size"]).slot_count
    assert rows[0]["slot_count"] < rows[-1]["slot_count"]
    # one capacity as a one-element sequence is the same sweep as the int, seeds and all
    one = experiments.fpr_sweep((6,), (4,), n_negatives=10_000, capacity=(3_000,), seed=2, as_frame=False)
    assert one == experiments.fpr_sweep((6,), (4,), n_negatives=10_000, capacity=3_000, seed=2, as_frame=False)
    assert one[0]["capacity"] == 3_000
    with pytest.raises(ValueError, match="no sizes"):
        experiments.fpr_sweep((8,), (4,), capacity=())
    with pytest.raises(ValueError, match="capacity must be positive"):
        experiments.fpr_sweep((8,), (4,), capacity=(1_000, 0))
    with pytest.raises(TypeError, match="capacity must be an int or an iterable"):
        experiments.fpr_sweep((8,), (4,), capacity=1e4)
    with pytest.raises(TypeError, match="each capacity must be an int"):
        experiments.fpr_sweep((8,), (4,), capacity=(1_000, "x"))


def test_plot_fpr_sweep_tells_capacities_apart(plt):
    from cuckoo import plotting

    rows = experiments.fpr_sweep((6, 8, 10), (4,), n_negatives=20_000, capacity=(1_000, 10_000, 100_000), as_frame=False)
    ax = plotting.plot_fpr_sweep(rows)
    texts = _legend_texts(ax)
    for cap in ("1,000", "10,000", "100,000"):
        assert f"capacity {cap}, b = 4: measured (95% CI)" in texts
        assert any(t.startswith(f"capacity {cap}, b = 4: theory at load") for t in texts)
    # each capacity's theory line has its own colour, and goes through its own rows
    lines = {l.get_label(): l for l in ax.get_lines() if l.get_label().startswith("capacity")}
    assert len({l.get_color() for l in lines.values()}) == 3
    for cap, text in ((1_000, "1,000"), (100_000, "100,000")):
        line = next(l for label, l in lines.items() if label.startswith(f"capacity {text}, b = 4: theory"))
        assert np.allclose(line.get_ydata(), [r["expected_fpr"] for r in rows if r["capacity"] == cap])
    assert "3 capacities" in ax.get_title()
    # a single capacity keeps the plain labels
    ax = plotting.plot_fpr_sweep([r for r in rows if r["capacity"] == 1_000])
    assert not any("capacity" in t for t in _legend_texts(ax))
