"""False-positive-rate and load experiments on cuckoo filters, measured beside the theory.

    >>> from cuckoo import Filter, experiments
    >>> f = Filter(100_000, fingerprint_bits=12)
    >>> f.add_many(range(90_000))
    90000
    >>> m = experiments.measure_fpr(f, 1_000_000)   # 10^6 keys never inserted
    >>> m.false_positives, round(m.expected_fpr * m.negatives)   # doctest: +SKIP
    (1659, 1644)

- :func:`measure_fpr`: look up keys known to be absent, count the hits, with a confidence interval
  and the theoretical rate at the filter's load.
- :func:`fill_curve`: fill a filter in steps until the first failed insert; the load reached and
  the eviction work per insert at each step.
- :func:`max_load_sweep`: the load at the first failed insert for several fingerprint widths and
  bucket sizes.
- :func:`fpr_sweep`: measured against theoretical FPR over fingerprint widths and bucket sizes,
  with the space cost and a Bloom filter's space at the same FPR.

Tables are pandas DataFrames when pandas is installed, else lists of dicts (``as_frame=False``
forces the list). :mod:`cuckoo.plotting` draws them.

Keys. The experiments insert the integers ``start, start + 1, ...`` with ``start >= 0``, and use
as absent keys the integers from ``NEGATIVE_KEYS_START = -2**63`` upward: distinct integers, so
never equal to an inserted key. (Integers are hashed by value, so these are as random as any keys.)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import theory
from ._core import Filter, FilterFullError

__all__ = [
    "NEGATIVE_KEYS_START",
    "SWEEP_LOADS",
    "FPRMeasurement",
    "FillCurve",
    "wilson_interval",
    "measure_fpr",
    "fill_curve",
    "max_load_sweep",
    "fpr_sweep",
    "format_table",
]

NEGATIVE_KEYS_START = -(2**63)
"""First of the integer keys :func:`measure_fpr` generates when given a count (all negative)."""

SWEEP_LOADS: Dict[int, float] = {2: 0.84, 4: 0.95, 8: 0.98}
"""Default target loads of :func:`fpr_sweep`: the maximum loads Fan et al. report for b = 2, 4, 8."""

_CHUNK = 1 << 20  # keys generated per contains_many / add_many call: bounds temporary memory

# fpr_sweep's default number of absent keys per configuration: enough for about
# _TARGET_FALSE_POSITIVES expected false positives (relative standard error ~3%), within bounds.
_TARGET_FALSE_POSITIVES = 1000
_MIN_NEGATIVES = 100_000
_MAX_NEGATIVES = 4_000_000

Table = Union[List[Dict[str, Any]], Any]  # a list of dicts or a pandas.DataFrame


def _table(rows: List[Dict[str, Any]], as_frame: Optional[bool]) -> Table:
    if as_frame is False:
        return rows
    try:
        import pandas as pd
    except ImportError:
        if as_frame:
            raise ImportError("as_frame=True needs pandas: pip install pandas") from None
        return rows
    return pd.DataFrame(rows)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    n = int(value.__index__())
    if n <= 0:
        raise ValueError(f"{name} must be positive, got {n}")
    return n


def _check_filter(flt: Any) -> None:
    if not isinstance(flt, Filter):
        raise TypeError(f"expected a cuckoo.Filter, not {type(flt).__name__}")


# ---------------------------------------------------------------------------------------------
# measuring the false-positive rate


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / trials``.

    With ``p = k/n`` and ``z`` the normal quantile of ``(1 + confidence)/2``::

        centre = (p + z^2/(2n)) / (1 + z^2/n)
        half   = z / (1 + z^2/n) * sqrt(p (1 - p)/n + z^2/(4 n^2))

    Unlike the normal approximation it behaves for ``k = 0`` and for tiny rates (it never leaves
    [0, 1]), which is the case of interest for false-positive rates.
    """
    n = _positive_int(trials, "trials")
    k = int(successes)
    if not 0 <= k <= n:
        raise ValueError(f"successes must be between 0 and trials={n}, got {k}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = k / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class FPRMeasurement:
    """Result of :func:`measure_fpr`.

    ``measured_fpr = false_positives / negatives``; ``[ci_low, ci_high]`` its Wilson interval at
    ``confidence``; ``expected_fpr`` the theory at the filter's ``load`` and ``fpr_bound`` at full
    load, both the filter's own (``Filter.expected_fpr``, ``Filter.fpr_bound``): for one stage
    :func:`cuckoo.theory.expected_fpr` at the load; for a grown filter, the chance that any stage
    (each with its own fingerprint width and load) answers falsely, and the bound of every stage
    it has or could add.
    """

    measured_fpr: float
    negatives: int
    false_positives: int
    ci_low: float
    ci_high: float
    confidence: float
    load: float
    expected_fpr: float
    fpr_bound: float

    @property
    def ratio(self) -> float:
        """``measured_fpr / expected_fpr`` (1.0 means the theory is exact)."""
        return self.measured_fpr / self.expected_fpr if self.expected_fpr > 0 else math.inf

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d

    def __str__(self) -> str:
        return (
            f"FPR {self.measured_fpr:.4g} ({self.false_positives:,} of {self.negatives:,} absent keys; "
            f"{self.confidence:.0%} CI {self.ci_low:.4g}-{self.ci_high:.4g}), "
            f"theory {self.expected_fpr:.4g} at load {self.load:.1%}, bound {self.fpr_bound:.4g}"
        )


def _count_hits(flt: Any, negatives: Any) -> Tuple[int, int]:
    """(hits, n) for absent keys given as an array/iterable or as a count."""
    if isinstance(negatives, (bool, float, np.bool_, np.floating)):
        raise TypeError(
            f"negatives must be a count (int) or a collection of keys, not {type(negatives).__name__}"
        )
    if isinstance(negatives, (int, np.integer)) and not isinstance(negatives, bool):
        n = _positive_int(negatives, "negatives")
        if n > 2**63:
            raise ValueError("negatives: at most 2**63 generated keys")
        hits = 0
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            # int64 keys -2**63 + lo ... -2**63 + hi - 1: all negative, never inserted by the helpers
            keys = np.arange(lo, hi, dtype=np.int64)
            keys += np.int64(NEGATIVE_KEYS_START)
            hits += int(np.count_nonzero(flt.contains_many(keys)))
        return hits, n
    if isinstance(negatives, (str, bytes)):
        raise TypeError("negatives must be a count or a collection of keys, not a single key")
    found = flt.contains_many(negatives)
    n = int(found.size)
    if n == 0:
        raise ValueError("negatives is empty: no keys to measure with")
    return int(np.count_nonzero(found)), n


def measure_fpr(flt: Filter, negatives: Any, *, confidence: float = 0.95) -> FPRMeasurement:
    """Measure a filter's false-positive rate with keys that were never inserted.

    Parameters
    ----------
    flt:
        The filter.
    negatives:
        Absent keys: any bulk input ``contains_many`` takes (NumPy array, list, Arrow array...),
        which the caller guarantees were not inserted; or a count ``n``, in which case the ``n``
        integers from ``NEGATIVE_KEYS_START = -2**63`` upward are used (absent as long as the
        filter's integer keys are non-negative, as with every helper of this module). Looked up in
        chunks of 2^20 keys with ``contains_many``.
    confidence:
        Level of the Wilson interval (default 0.95).

    Every hit is a false positive, so ``measured_fpr = hits / n``.
    """
    _check_filter(flt)
    hits, n = _count_hits(flt, negatives)
    low, high = wilson_interval(hits, n, confidence)
    load = flt.load_factor
    return FPRMeasurement(
        measured_fpr=hits / n,
        negatives=n,
        false_positives=hits,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        load=load,
        # The filter's own, stage-aware figures: a grown filter's stages have wider fingerprints
        # and their own loads, so the first stage's width and the overall load are not its theory.
        expected_fpr=flt.expected_fpr,
        fpr_bound=flt.fpr_bound,
    )


# ---------------------------------------------------------------------------------------------
# filling until the first failure


def _fill(flt: Any, start: int, count: int) -> Tuple[int, bool]:
    """Adds the integers start .. start+count-1 in order; (how many went in, whether one failed)."""
    done = 0
    while done < count:
        n = min(_CHUNK, count - done)
        keys = np.arange(start + done, start + done + n, dtype=np.uint64)
        try:
            flt.add_many(keys)
        except FilterFullError as e:
            return done + int(e.inserted), True
        done += n
    return done, False


@dataclass
class FillCurve:
    """Result of :func:`fill_curve`: one row per step, and the load at the first failed insert.

    Each row has ``step``, ``items`` (stored after the step), ``load`` (``items / slot_count``),
    ``inserted`` (keys added in the step), ``failed`` (whether the step ended in the first failed
    insert), and the step's increments of :meth:`Filter.stats` counters divided by the insert
    attempts of the step (``inserted`` plus the failed one, if any): ``kicked_fraction`` (inserts
    that had to move other fingerprints), ``moves_per_insert`` (fingerprints moved) and
    ``buckets_searched_per_insert`` (buckets visited by the breadth-first eviction search).
    """

    capacity: int
    fingerprint_bits: int
    bucket_size: int
    slot_count: int
    max_kicks: int
    seed: int
    load_at_failure: Optional[float]
    rows: List[Dict[str, Any]] = field(default_factory=list)

    def table(self, as_frame: Optional[bool] = None) -> Table:
        """The rows as a pandas DataFrame (when pandas is installed) or a list of dicts."""
        return _table(list(self.rows), as_frame)

    def column(self, name: str) -> np.ndarray:
        """One column of the rows as a NumPy array (``curve.column("load")``)."""
        if self.rows and name not in self.rows[0]:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self.rows[0])}")
        return np.array([r[name] for r in self.rows])

    def __str__(self) -> str:
        fail = "no failure" if self.load_at_failure is None else f"first failure at load {self.load_at_failure:.2%}"
        return (
            f"FillCurve(f={self.fingerprint_bits}, b={self.bucket_size}, {self.slot_count:,} slots, "
            f"max_kicks={self.max_kicks}: {len(self.rows)} steps, {fail})"
        )


def fill_curve(
    capacity: int,
    fingerprint_bits: int = 16,
    bucket_size: int = 4,
    *,
    steps: int = 50,
    max_kicks: int = 500,
    seed: int = 0,
    start: int = 0,
) -> FillCurve:
    """Fill ``Filter(capacity, fingerprint_bits=f, bucket_size=b)`` in steps until the first failed insert.

    Each step adds the next ``ceil(slot_count / steps)`` integers (from ``start`` upward) with
    ``add_many`` and records the load and the eviction work per insert (from :meth:`Filter.stats`).
    Filling stops at the first ``FilterFullError``; its load (the keys stored before the failing
    one, over ``slot_count``) is ``load_at_failure``. As at most ``slot_count`` keys fit, a
    failure always happens.
    """
    flt = Filter(capacity, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, max_kicks=max_kicks, seed=seed)
    steps = _positive_int(steps, "steps")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 0:
        raise ValueError(f"start must be a non-negative int, got {start!r}")
    slots = flt.slot_count
    per_step = -(-slots // steps)
    rows: List[Dict[str, Any]] = []
    next_key = int(start)
    load_at_failure: Optional[float] = None
    before = flt.stats()
    step = 0
    while load_at_failure is None:
        step += 1
        added, failed = _fill(flt, next_key, per_step)
        next_key += added + (1 if failed else 0)
        after = flt.stats()
        attempts = added + (1 if failed else 0)
        rows.append(
            {
                "step": step,
                "items": len(flt),
                "load": flt.load_factor,
                "inserted": added,
                "failed": failed,
                "kicked_fraction": (after["kicked_inserts"] - before["kicked_inserts"]) / attempts,
                "moves_per_insert": (after["moves"] - before["moves"]) / attempts,
                "buckets_searched_per_insert": (after["buckets_searched"] - before["buckets_searched"]) / attempts,
            }
        )
        before = after
        if failed:
            load_at_failure = flt.load_factor
    return FillCurve(
        capacity=int(capacity),
        fingerprint_bits=flt.fingerprint_bits,
        bucket_size=flt.bucket_size,
        slot_count=slots,
        max_kicks=flt.max_kicks,
        seed=flt.seed,
        load_at_failure=load_at_failure,
        rows=rows,
    )


def max_load_sweep(
    fingerprint_bits: Iterable[int] = range(4, 17),
    bucket_sizes: Iterable[int] = (2, 4, 8),
    *,
    capacity: int = 100_000,
    repeats: int = 3,
    max_kicks: int = 500,
    seed: int = 0,
    as_frame: Optional[bool] = None,
) -> Table:
    """Load at the first failed insert, for each fingerprint width, bucket size and repeat.

    Each repeat fills a fresh ``Filter(capacity, fingerprint_bits=f, bucket_size=b)`` (its own
    seed) with distinct integers until the first ``FilterFullError``. Columns: ``fingerprint_bits,
    bucket_size, repeat, seed, slot_count, max_kicks, load_at_failure``.
    """
    repeats = _positive_int(repeats, "repeats")
    rows: List[Dict[str, Any]] = []
    run = 0
    for b in bucket_sizes:
        for f in fingerprint_bits:
            for r in range(repeats):
                s = seed + run
                run += 1
                flt = Filter(capacity, fingerprint_bits=f, bucket_size=b, max_kicks=max_kicks, seed=s)
                _fill(flt, 0, flt.slot_count + 1)
                rows.append(
                    {
                        "fingerprint_bits": int(f),
                        "bucket_size": int(b),
                        "repeat": r,
                        "seed": s,
                        "slot_count": flt.slot_count,
                        "max_kicks": flt.max_kicks,
                        "load_at_failure": flt.load_factor,
                    }
                )
    return _table(rows, as_frame)


# ---------------------------------------------------------------------------------------------
# the FPR sweep


def _target_load(load: Union[None, float, Mapping[int, float]], b: int) -> float:
    if load is None:
        return SWEEP_LOADS[b]
    if isinstance(load, Mapping):
        if b not in load:
            raise ValueError(f"load gives no target for bucket_size={b}")
        value = load[b]
    else:
        value = load
    x = float(value)
    if not 0.0 < x <= 1.0:
        raise ValueError(f"load must be in (0, 1], got {value!r}")
    return x


def _negatives_for(expected: float) -> int:
    if expected <= 0.0:
        return _MAX_NEGATIVES
    n = math.ceil(_TARGET_FALSE_POSITIVES / expected)
    return int(min(_MAX_NEGATIVES, max(_MIN_NEGATIVES, n)))


def fpr_sweep(
    fingerprint_bits: Iterable[int] = range(4, 17),
    bucket_sizes: Iterable[int] = (2, 4, 8),
    load: Union[None, float, Mapping[int, float]] = None,
    n_negatives: Optional[int] = None,
    *,
    capacity: Union[int, Iterable[int]] = 100_000,
    seed: int = 0,
    max_kicks: int = 500,
    confidence: float = 0.95,
    as_frame: Optional[bool] = None,
    semi_sort: Union[bool, Iterable[bool]] = False,
) -> Table:
    """Measured against theoretical false-positive rate over fingerprint widths, bucket sizes and
    (optionally) filter sizes.

    For each bucket size ``b`` and fingerprint width ``f``: build ``Filter(capacity,
    fingerprint_bits=f, bucket_size=b)`` (about ``capacity / design_load(b)`` slots), add distinct
    integers until the target load (``ceil(target * slot_count)`` keys) or the first failed insert,
    whichever comes first, then look up absent keys (:func:`measure_fpr`).

    Parameters
    ----------
    load:
        Target load factor: one float for every ``b``, a ``{b: load}`` mapping, or None for
        :data:`SWEEP_LOADS` (0.84, 0.95, 0.98 for b = 2, 4, 8: the maximum loads of the paper).
        Short fingerprints (4-5 bits) can fail before the target; the row then has
        ``reached_target=False`` and the load actually reached, and its theory is at that load.
    n_negatives:
        Absent keys looked up per configuration. None (default): enough for about 1000 expected
        false positives (``1000 / expected_fpr``), at least 10^5 and at most 4*10^6, so that every
        row's relative standard error is a few percent (about 7% at worst, for f=16, b=2).
    capacity:
        ``Filter(capacity)``: one int, or several (e.g. ``(10_000, 100_000, 1_000_000)``) to
        sweep filter sizes too; each row names its ``capacity``, and
        :func:`cuckoo.plotting.plot_fpr_sweep` draws each capacity apart.
    seed, max_kicks:
        Filter parameters; configuration ``i`` uses seed ``seed + i``.
    semi_sort:
        ``Filter(..., semi_sort=...)``: False (default), True, or several values to sweep, e.g.
        ``(False, True)``. Semi-sorted filters exist only for ``b = 4`` and ``f <= 16``: other
        combinations get no semi-sorted row (``semi_sort=True`` with no such combination raises
        ValueError).

    Returns
    -------
    Table
        A DataFrame when pandas is installed, else a list of dicts (``as_frame`` forces one), with
        one row per configuration and the columns below.

    Notes
    -----
    The columns: ``fingerprint_bits, bucket_size, load`` (reached), ``measured_fpr, ci_low, ci_high`` (Wilson
    interval at ``confidence``), ``expected_fpr`` (theory at ``load``), ``fpr_bound`` (theory at
    load 1), ``bits_per_item`` (table bits per stored key, ``8 * nbytes / items``),
    ``bloom_bits_per_item`` and ``lower_bound_bits`` (a Bloom filter's, and the information-
    theoretic minimum, bits per item at the measured FPR, or the expected one if nothing was
    measured), then ``ratio`` (measured / expected), ``exact_fpr`` (the sharper
    :func:`cuckoo.theory.exact_fpr` at ``load``), ``capacity`` (the ``Filter(capacity)``),
    ``target_load, reached_target, items, slot_count, negatives, false_positives, semi_sort``.
    """
    if n_negatives is not None:
        n_negatives = _positive_int(n_negatives, "n_negatives")
    semi_values = [semi_sort] if isinstance(semi_sort, bool) else list(semi_sort)
    if not all(isinstance(v, bool) for v in semi_values):
        raise TypeError("semi_sort must be a bool or an iterable of bools")
    bucket_sizes, fingerprint_bits = list(bucket_sizes), list(fingerprint_bits)
    if isinstance(capacity, bool) or hasattr(capacity, "__index__"):
        capacities = [_positive_int(capacity, "capacity")]
    elif isinstance(capacity, Iterable) and not isinstance(capacity, (str, bytes)):
        capacities = [_positive_int(c, "each capacity") for c in capacity]
        if not capacities:
            raise ValueError("capacity: no sizes given (an int or a non-empty iterable of ints)")
    else:
        raise TypeError(f"capacity must be an int or an iterable of ints, not {type(capacity).__name__}")
    configs = [
        (cap, b, f, semi)
        for cap in capacities
        for b in bucket_sizes
        for f in fingerprint_bits
        for semi in semi_values
        if not semi or (b == 4 and f <= theory.SEMI_SORT_MAX_FINGERPRINT_BITS)
    ]
    if semi_values and not configs and bucket_sizes and fingerprint_bits:
        raise ValueError("semi_sort needs bucket_size 4 and fingerprint_bits of at most 16")
    rows: List[Dict[str, Any]] = []
    for run, (cap, b, f, semi) in enumerate(configs):
        target = _target_load(load, int(b))
        flt = Filter(
            cap, fingerprint_bits=f, bucket_size=b, max_kicks=max_kicks, seed=seed + run, semi_sort=semi
        )
        want = min(flt.slot_count, math.ceil(target * flt.slot_count - 1e-9))
        added, failed = _fill(flt, 0, want)
        n = n_negatives if n_negatives is not None else _negatives_for(flt.expected_fpr)
        m = measure_fpr(flt, n, confidence=confidence)
        eps = m.measured_fpr if m.false_positives > 0 else m.expected_fpr
        rows.append(
            {
                "fingerprint_bits": flt.fingerprint_bits,
                "bucket_size": flt.bucket_size,
                "load": m.load,
                "measured_fpr": m.measured_fpr,
                "ci_low": m.ci_low,
                "ci_high": m.ci_high,
                "expected_fpr": m.expected_fpr,
                "fpr_bound": m.fpr_bound,
                "bits_per_item": 8.0 * flt.nbytes / len(flt) if len(flt) else math.inf,
                "bloom_bits_per_item": theory.bloom_bits_per_item(eps),
                "lower_bound_bits": theory.lower_bound_bits_per_item(eps),
                "ratio": m.ratio,
                "exact_fpr": theory.exact_fpr(flt.fingerprint_bits, flt.bucket_size, m.load),
                "capacity": cap,
                "target_load": target,
                "reached_target": not failed,
                "items": len(flt),
                "slot_count": flt.slot_count,
                "negatives": m.negatives,
                "false_positives": m.false_positives,
                "semi_sort": flt.semi_sort,
            }
        )
    return _table(rows, as_frame)


def format_table(table: Table, columns: Optional[Sequence[str]] = None) -> str:
    """A plain-text rendering of a table (list of dicts or DataFrame), for terminals and reports."""
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    if not rows:
        return "(empty)"
    cols = list(columns) if columns is not None else list(rows[0])

    def cell(v: Any) -> str:
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (int, np.integer)):
            return f"{int(v):,}"
        if isinstance(v, (float, np.floating)):
            x = float(v)
            if x == 0 or 1e-3 <= abs(x) < 1e4:
                return f"{x:.4g}"
            return f"{x:.3e}"
        return str(v)

    cells = [[cell(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)
