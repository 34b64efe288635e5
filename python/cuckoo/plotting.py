"""Figures of cuckoo-filter experiments with matplotlib (``pip install matplotlib``, or
the ``plot`` extra: ``pip install ".[plot]"`` from a clone).

Each function draws on ``ax`` (a new figure if None) and returns the Axes:

- :func:`plot_max_load`: load at the first failed insert vs fingerprint bits, per bucket size
  (table from :func:`cuckoo.experiments.max_load_sweep`).
- :func:`plot_fill_curve`: eviction work per insert as the load grows, up to the first failure
  (:func:`cuckoo.experiments.fill_curve`).
- :func:`plot_fpr_sweep`: false-positive rate vs fingerprint bits, measured (with confidence
  intervals) and theoretical, per bucket size (:func:`cuckoo.experiments.fpr_sweep`).
- :func:`plot_fpr_ratio`: measured / theoretical rate of the same sweep.
- :func:`plot_space`: bits per item vs false-positive rate: cuckoo filter, Bloom filter and the
  information-theoretic lower bound.

matplotlib is imported when a function is called, never at ``import cuckoo``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import theory
from .experiments import FillCurve

__all__ = ["plot_max_load", "plot_fill_curve", "plot_fpr_sweep", "plot_fpr_ratio", "plot_space"]

_COLORS = {2: "tab:blue", 4: "tab:orange", 8: "tab:green"}
_MARKERS = {2: "o", 4: "s", 8: "^"}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('cuckoo.plotting needs matplotlib: pip install matplotlib (or, from a clone of cuckoo, pip install ".[plot]")') from None
    return plt


def _axes(ax: Any, figsize: Sequence[float] = (6.4, 4.4)) -> Any:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=tuple(figsize), layout="constrained")
    return ax


def _records(table: Any) -> List[Dict[str, Any]]:
    if hasattr(table, "to_dict"):  # pandas.DataFrame
        return list(table.to_dict("records"))
    rows = list(table)
    if rows and not isinstance(rows[0], dict):
        raise TypeError(f"expected a table: a DataFrame or a list of dicts, got a list of {type(rows[0]).__name__}")
    return rows


def _need(rows: List[Dict[str, Any]], *columns: str) -> None:
    if not rows:
        raise ValueError("the table is empty: nothing to plot")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise ValueError(f"the table lacks column(s) {', '.join(missing)}")


def _by_bucket(rows: List[Dict[str, Any]]) -> Dict[int, List[Dict[str, Any]]]:
    groups: Dict[int, List[Dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(int(r["bucket_size"]), []).append(r)
    return dict(sorted(groups.items()))


def _color(b: int) -> str:
    return _COLORS.get(b, "tab:gray")


def plot_max_load(table: Any, *, ax: Any = None, show_design_load: bool = True) -> Any:
    """Load factor at the first failed insert vs fingerprint bits, one line per bucket size.

    ``table``: :func:`cuckoo.experiments.max_load_sweep`'s output. Points are the mean over the
    repeats (fills with different seeds), bars span their minimum to maximum. With ``show_design_load``, a dashed line per
    bucket size marks the load ``Filter(capacity)`` is sized for.
    """
    rows = _records(table)
    _need(rows, "fingerprint_bits", "bucket_size", "load_at_failure")
    ax = _axes(ax)
    for b, group in _by_bucket(rows).items():
        fs = sorted({int(r["fingerprint_bits"]) for r in group})
        loads = [np.array([r["load_at_failure"] for r in group if int(r["fingerprint_bits"]) == f]) for f in fs]
        mean = np.array([x.mean() for x in loads]) * 100
        low = mean - np.array([x.min() for x in loads]) * 100
        high = np.array([x.max() for x in loads]) * 100 - mean
        slots = group[0].get("slot_count")
        runs = max(len(x) for x in loads)
        label = f"b = {b}" + (f", {slots:,} slots" if slots else "") + (f", {runs} fills" if runs > 1 else "")
        ax.errorbar(fs, mean, yerr=[low, high], color=_color(b), marker=_MARKERS.get(b, "o"), ms=5,
                    capsize=3, lw=1.5, label=label)
        if show_design_load:
            ax.axhline(theory.design_load(b) * 100, color=_color(b), ls="--", lw=0.9, alpha=0.8)
    if show_design_load:
        ax.plot([], [], color="gray", ls="--", lw=0.9, label="design load (what Filter(capacity) allocates for)")
    ax.set_xlabel("fingerprint size f (bits)")
    ax.set_ylabel("load factor at first failed insert (% of slots)")
    kicks = {r.get("max_kicks") for r in rows}
    ax.set_title("Load reached before the first insert fails"
                 + (f" (max_kicks = {kicks.pop()})" if len(kicks) == 1 and None not in kicks else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_fill_curve(
    curves: Union[FillCurve, Iterable[FillCurve]],
    *,
    metric: str = "buckets_searched_per_insert",
    ax: Any = None,
) -> Any:
    """Eviction work per insert as a filter fills, one line per :class:`~cuckoo.experiments.FillCurve`.

    ``metric``: ``"buckets_searched_per_insert"`` (default), ``"moves_per_insert"`` or
    ``"kicked_fraction"``. The y axis is logarithmic (steps with no work are left out); a dotted
    vertical line marks each curve's load at the first failed insert.
    """
    labels = {
        "buckets_searched_per_insert": "buckets searched per insert (log scale)",
        "moves_per_insert": "fingerprints moved per insert (log scale)",
        "kicked_fraction": "fraction of inserts that moved others (log scale)",
    }
    if metric not in labels:
        raise ValueError(f"metric must be one of {', '.join(labels)}, got {metric!r}")
    if isinstance(curves, FillCurve):
        curves = [curves]
    curves = list(curves)
    if not curves:
        raise ValueError("no curves to plot")
    ax = _axes(ax)
    for c in curves:
        if not isinstance(c, FillCurve):
            raise TypeError(f"expected FillCurve objects, not {type(c).__name__}")
        load = c.column("load") * 100
        y = c.column(metric).astype(float)
        keep = y > 0
        color = _color(c.bucket_size) if len({x.bucket_size for x in curves}) == len(curves) else None
        line = ax.plot(load[keep], y[keep], marker=".", ms=4, lw=1.5, color=color,
                       label=f"b = {c.bucket_size}, f = {c.fingerprint_bits}"
                       + (f": fails at {c.load_at_failure:.1%}" if c.load_at_failure is not None else ""))[0]
        if c.load_at_failure is not None:
            ax.axvline(c.load_at_failure * 100, color=line.get_color(), ls=":", lw=1.2)
    ax.set_yscale("log")
    ax.set_xlabel("load factor (% of slots filled)")
    ax.set_ylabel(labels[metric])
    ax.set_title(f"Insert cost as the filter fills (max_kicks = {curves[0].max_kicks})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_fpr_sweep(table: Any, *, ax: Any = None, show_bound: bool = True) -> Any:
    """False-positive rate vs fingerprint bits (log scale), per bucket size and per capacity.

    ``table``: :func:`cuckoo.experiments.fpr_sweep`'s output. Markers with error bars: measured
    rate and its confidence interval. Solid line: theory at the load each filter reached
    (``expected_fpr``). Dotted (``show_bound``): the paper's bound ``2b / 2^f`` at full load.

    One capacity: a colour per bucket size. Several (``fpr_sweep(capacity=(10_000, 100_000))``):
    a colour per capacity and a marker per bucket size, and every legend entry names its capacity,
    so that the sizes can be told apart.
    """
    rows = _records(table)
    _need(rows, "fingerprint_bits", "bucket_size", "load", "measured_fpr", "ci_low", "ci_high", "expected_fpr")
    ax = _axes(ax)
    capacities = sorted({int(r["capacity"]) for r in rows if r.get("capacity") is not None})
    several = len(capacities) > 1
    palette = _pyplot().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"]) if several else []
    bucket_sizes = sorted(_by_bucket(rows))
    for cap in capacities if several else [None]:
        cap_rows = [r for r in rows if cap is None or int(r["capacity"]) == cap]
        for b, group in _by_bucket(cap_rows).items():
            group = sorted(group, key=lambda r: r["fingerprint_bits"])
            f = np.array([r["fingerprint_bits"] for r in group], dtype=float)
            measured = np.array([r["measured_fpr"] for r in group])
            err = np.array([[r["measured_fpr"] - r["ci_low"] for r in group], [r["ci_high"] - r["measured_fpr"] for r in group]])
            loads = [r["load"] for r in group]
            load_text = f"{min(loads):.0%}" if max(loads) - min(loads) < 0.005 else f"{min(loads):.0%}-{max(loads):.0%}"
            if several:
                color = palette[capacities.index(cap) % len(palette)]
                name = f"capacity {cap:,}, b = {b}"
            else:
                color = _color(b)
                name = f"b = {b}"
            ax.plot(f, [r["expected_fpr"] for r in group], color=color, lw=1.5,
                    label=f"{name}: theory at load {load_text}")
            ok = measured > 0
            ax.errorbar(f[ok], measured[ok], yerr=err[:, ok], color=color, marker=_MARKERS.get(b, "o"), ms=5,
                        mfc="white", ls="none", capsize=2, label=f"{name}: measured (95% CI)")
    if show_bound:
        # The bound depends on b and f only, not on the capacity: one line per bucket size.
        for b in bucket_sizes:
            f = np.array(sorted({float(r["fingerprint_bits"]) for r in rows if int(r["bucket_size"]) == b}))
            ax.plot(f, 2.0 * b / 2.0**f, color="gray" if several else _color(b), lw=1.0, ls=":")
        ax.plot([], [], color="gray", lw=1.0, ls=":", label="bound 2b / 2^f (full table)")
    ax.set_yscale("log")
    ax.set_xlabel("fingerprint size f (bits)")
    ax.set_ylabel("false-positive rate (log scale)")
    ax.set_title("False-positive rate vs fingerprint size"
                 + (f" ({len(capacities)} capacities)" if several else ""))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower left", fontsize="small", ncol=1)
    return ax


def plot_fpr_ratio(table: Any, *, ax: Any = None, tolerance: float = 1.25) -> Any:
    """Measured / theoretical false-positive rate vs fingerprint bits, with confidence intervals.

    A shaded band marks ``[1/tolerance, tolerance]``; points offset slightly per bucket size so
    their error bars do not overlap.
    """
    rows = _records(table)
    _need(rows, "fingerprint_bits", "bucket_size", "measured_fpr", "ci_low", "ci_high", "expected_fpr")
    ax = _axes(ax)
    ax.axhspan(1.0 / tolerance, tolerance, color="0.92", zorder=0, label=f"within {tolerance:g}x")
    ax.axhline(1.0, color="0.4", lw=1.0)
    groups = _by_bucket(rows)
    for k, (b, group) in enumerate(groups.items()):
        group = sorted(group, key=lambda r: r["fingerprint_bits"])
        f = np.array([r["fingerprint_bits"] for r in group], dtype=float) + 0.15 * (k - (len(groups) - 1) / 2)
        e = np.array([r["expected_fpr"] for r in group])
        ratio = np.array([r["measured_fpr"] for r in group]) / e
        err = np.array([ratio - np.array([r["ci_low"] for r in group]) / e,
                        np.array([r["ci_high"] for r in group]) / e - ratio])
        ax.errorbar(f, ratio, yerr=err, color=_color(b), marker=_MARKERS.get(b, "o"), ms=4, ls="none",
                    capsize=2, label=f"b = {b}")
    ax.set_ylim(min(0.75, 1.0 / tolerance - 0.05), max(1.3, tolerance + 0.05))
    ax.set_xlabel("fingerprint size f (bits)")
    ax.set_ylabel("measured / theoretical FPR")
    ax.set_title("Measured false-positive rate relative to theory (95% CI)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small", ncol=4)
    return ax


def plot_space(
    *,
    bucket_size: int = 4,
    load: Optional[float] = None,
    fpr_range: Sequence[float] = (1e-6, 0.3),
    sweep: Any = None,
    ax: Any = None,
) -> Any:
    """Bits per item vs false-positive rate: cuckoo filter, Bloom filter and the lower bound.

    - Cuckoo, sized for a target ``eps`` (staircase): ``f / load`` bits with
      ``f = fingerprint_bits(eps, b)``, the integer width ``Filter(capacity, fpr=eps)`` picks.
    - Cuckoo, each integer ``f`` (points): ``f / load`` bits at the rate it really has at
      ``load``, ``expected_fpr(f, b, load)``.
    - Bloom filter: ``log2(1/eps) / ln 2``; lower bound: ``log2(1/eps)``.

    ``load`` defaults to ``design_load(bucket_size)`` (0.935 for b = 4). ``sweep``: an optional
    :func:`~cuckoo.experiments.fpr_sweep` table; its rows with this bucket size are drawn as
    measured points (measured FPR, table bits per stored item).
    """
    b = int(bucket_size)
    alpha = theory.design_load(b) if load is None else float(load)
    lo, hi = float(fpr_range[0]), float(fpr_range[1])
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(f"fpr_range must be two rates 0 < low < high < 1, got {tuple(fpr_range)!r}")
    ax = _axes(ax)
    eps = np.geomspace(lo, hi, 1500)
    ax.plot(eps, [theory.lower_bound_bits_per_item(e) for e in eps], color="black", lw=1.5,
            label="lower bound log2(1/ε)")
    ax.plot(eps, [theory.bloom_bits_per_item(e) for e in eps], color="tab:red", lw=1.5,
            label="Bloom filter 1.44 log2(1/ε)")
    stair = [theory.bits_per_item(theory.fingerprint_bits(e, b), alpha) for e in eps]
    ax.plot(eps, stair, color="tab:blue", lw=1.2, alpha=0.7, drawstyle="steps-mid",
            label=f"cuckoo b = {b} sized for target ε (load {alpha:.1%})")
    fmin = theory.fingerprint_bits(hi, b)
    fmax = theory.fingerprint_bits(lo, b)
    fs = [f for f in range(max(theory.MIN_FINGERPRINT_BITS, fmin - 2), fmax + 1)
          if lo <= theory.expected_fpr(f, b, alpha) <= hi]
    ax.plot([theory.expected_fpr(f, b, alpha) for f in fs], [theory.bits_per_item(f, alpha) for f in fs],
            ls="none", marker="o", ms=4, color="tab:blue", label=f"cuckoo b = {b}, f = {fs[0]}..{fs[-1]}: actual rate")
    if sweep is not None:
        rows = [r for r in _records(sweep) if int(r["bucket_size"]) == b and r["measured_fpr"] > 0
                and lo <= r["measured_fpr"] <= hi]
        if rows:
            ax.plot([r["measured_fpr"] for r in rows], [r["bits_per_item"] for r in rows], ls="none", marker="x",
                    ms=6, color="tab:orange",
                    label=f"cuckoo b = {b}: measured (load {min(r['load'] for r in rows):.0%})")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("false-positive rate ε (log scale, smaller to the right)")
    ax.set_ylabel("bits per item")
    ax.set_title("Space per item vs false-positive rate")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return ax
