"""Sizing formulas for cuckoo filters: functions of the parameters, no filter needed.

The sizing (fingerprint width, design load, bucket count, table bytes) is the compiled core's one
rule, ``cuckoo::filter_shape`` in ``cpp/include/cuckoo/filter.hpp``, asked here through
``cuckoo._core._filter_shape``, so these functions size a filter exactly as ``Filter()`` will::

    >>> from cuckoo import theory
    >>> theory.fingerprint_bits(0.001)          # bucket_size=4
    13
    >>> theory.table_bytes(1_000_000, 13, 4)    # == Filter(1_000_000, fpr=0.001).nbytes
    1737996
    >>> round(theory.bits_per_item(13, theory.design_load(4)), 2)
    13.9

Semi-sorted buckets (``Filter(..., semi_sort=True)``, ``b = 4`` and ``f <= 16`` only; Fan et al.
2014, section 5.2) store a bucket's 4 fingerprints in ``4f - 4`` bits: the same fingerprints and
the same false-positive rate for 1 bit per slot less. They are sized to a higher load (0.955)::

    >>> round(theory.bits_per_item(13, theory.design_load(4, semi_sort=True), semi_sort=True), 2)
    12.57

Notation: ``f`` fingerprint bits, ``b`` slots per bucket (2, 4 or 8), ``m`` buckets,
``alpha`` load factor (stored items / ``m*b`` slots), ``eps`` false-positive rate.

The false-positive model: an absent key is compared with the ``2b`` slots of its two buckets, and
a stored fingerprint equals the key's with probability ``1/(2^f - 1)`` (fingerprints are uniform
over the non-zero ``f``-bit values; 0 marks an empty slot). At load ``alpha`` the two buckets hold
``2 b alpha`` fingerprints on average, so::

    eps(f, b, alpha) = 1 - (1 - 1/(2^f - 1))^(2 b alpha)  ~=  2 b alpha / 2^f

That is the core's formula (``Filter.expected_fpr``). A sharper one: a stored fingerprint can only
match if its item has the same pair of buckets and the same fingerprint as the query (``alt`` is
determined by bucket and fingerprint), which happens with probability ``2 / (m (2^f - 1))`` for
each of the ``n = alpha b m`` stored items independently, so::

    eps = 1 - (1 - 2/(m (2^f - 1)))^n  ->  1 - exp(-2 b alpha / (2^f - 1))   (m -> infinity)

(:func:`exact_fpr`). The core's value is higher, by about ``1/(2 (2^f - 1))`` relative at
most (up to 3.5% at f = 4, 0.8% at f = 6, 0.2% at f = 8); measurements follow the sharper one for short
fingerprints (see ``cuckoo.experiments.fpr_sweep``), where the core's formula is slightly
pessimistic.
"""

from __future__ import annotations

import math
from typing import Any, Dict

from . import _core

__all__ = [
    "MIN_FINGERPRINT_BITS",
    "MAX_FINGERPRINT_BITS",
    "BUCKET_SIZES",
    "fingerprint_bits",
    "expected_fpr",
    "exact_fpr",
    "fpr_bound",
    "bits_per_item",
    "design_load",
    "max_load",
    "bucket_count",
    "table_bytes",
    "bloom_bits_per_item",
    "lower_bound_bits_per_item",
    "SEMI_SORT_MAX_FINGERPRINT_BITS",
]

MIN_FINGERPRINT_BITS = 4
MAX_FINGERPRINT_BITS = 32
BUCKET_SIZES = (2, 4, 8)
# Mirrors cuckoo/semisort.hpp (for the error messages of the checks below).
SEMI_SORT_MAX_FINGERPRINT_BITS = 16

# Load at the first failed insert, measured (see max_load's docstring).
_MAX_LOAD: Dict[int, float] = {2: 0.85, 4: 0.955, 8: 0.98}


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return int(value.__index__())  # type: ignore[attr-defined]


def _check_bucket_size(bucket_size: object) -> int:
    b = _check_int(bucket_size, "bucket_size")
    if b not in BUCKET_SIZES:
        raise ValueError(f"bucket_size must be 2, 4 or 8, got {b}")
    return b


def _check_fingerprint_bits(fingerprint_bits: object) -> int:
    f = _check_int(fingerprint_bits, "fingerprint_bits")
    if not MIN_FINGERPRINT_BITS <= f <= MAX_FINGERPRINT_BITS:
        raise ValueError(
            f"fingerprint_bits must be between {MIN_FINGERPRINT_BITS} and {MAX_FINGERPRINT_BITS}, got {f}"
        )
    return f


def _check_semi_sort(semi_sort: object, bucket_size: int, fingerprint_bits: int | None = None) -> bool:
    if not isinstance(semi_sort, bool):
        raise TypeError(f"semi_sort must be a bool, not {type(semi_sort).__name__}")
    if semi_sort and bucket_size != 4:
        raise ValueError(f"semi_sort needs bucket_size=4, not {bucket_size}")
    if semi_sort and fingerprint_bits is not None and fingerprint_bits > SEMI_SORT_MAX_FINGERPRINT_BITS:
        raise ValueError(
            f"semi_sort needs fingerprint_bits of at most {SEMI_SORT_MAX_FINGERPRINT_BITS}, not {fingerprint_bits}"
        )
    return semi_sort


def _check_fpr(fpr: object) -> float:
    if isinstance(fpr, bool) or not isinstance(fpr, (int, float)):
        # numpy floats are float subclasses; anything else (str, None) is an error
        try:
            import numpy as np

            if isinstance(fpr, np.floating):
                return _check_fpr(float(fpr))
        except ImportError:  # pragma: no cover - numpy is a dependency
            pass
        raise TypeError(f"fpr must be a float, not {type(fpr).__name__}")
    x = float(fpr)
    if not 0.0 < x < 1.0:
        raise ValueError(f"fpr must be in (0, 1), got {fpr!r}")
    return x


def _check_load(load: object) -> float:
    if isinstance(load, bool) or not isinstance(load, (int, float)):
        try:
            import numpy as np

            if isinstance(load, (np.floating, np.integer)):
                return _check_load(float(load))
        except ImportError:  # pragma: no cover
            pass
        raise TypeError(f"load must be a float, not {type(load).__name__}")
    x = float(load)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"load must be in [0, 1], got {load!r}")
    return x


def _shape(capacity: int, bucket_size: int, *, fpr: float | None = None, fingerprint_bits: int | None = None,
           semi_sort: bool = False) -> Dict[str, Any]:
    # The core's filter_shape for checked arguments. Capacities past 2^62 need more than 2^32
    # buckets like any capacity past ~2^35 does: they are passed as 2^62, which the core refuses
    # as too large, instead of overflowing the binding's 64-bit argument.
    if fingerprint_bits is None and fpr is None:
        fingerprint_bits = MIN_FINGERPRINT_BITS
    return _core._filter_shape(  # type: ignore[no-any-return]
        min(capacity, 1 << 62), fpr, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, semi_sort=semi_sort
    )


def fingerprint_bits(fpr: float, bucket_size: int = 4) -> int:
    """Fingerprint width ``Filter(capacity, fpr)`` picks: the smallest ``f`` with ``2b / 2^f <= fpr``.

    ``f = max(4, ceil(log2(2 b / fpr)))``. Since ``fpr_bound(f, b) <= 2b / 2^f`` for ``b >= 2``,
    the filter's false-positive rate stays below ``fpr`` even completely full.

    Raises ValueError if ``fpr`` is not in (0, 1) or would need more than 32 bits.
    """
    eps = _check_fpr(fpr)
    b = _check_bucket_size(bucket_size)
    return int(_shape(1, b, fpr=eps)["fingerprint_bits"])


def expected_fpr(fingerprint_bits: int, bucket_size: int, load: float) -> float:
    """False-positive rate of a filter at load factor ``load`` (``Filter.expected_fpr``).

    The same for semi-sorted buckets: they store the same fingerprints in fewer bits.

    ``eps = 1 - (1 - 1/(2^f - 1))^(2 b load)``: the chance that one of the ``2 b load``
    fingerprints stored (on average) in an absent key's two buckets equals its fingerprint. For
    large ``f`` this is ``~= 2 b load / 2^f``.
    """
    f = _check_fingerprint_bits(fingerprint_bits)
    b = _check_bucket_size(bucket_size)
    alpha = _check_load(load)
    p = 1.0 / (2.0**f - 1.0)
    return -math.expm1(2.0 * b * alpha * math.log1p(-p))


def exact_fpr(fingerprint_bits: int, bucket_size: int, load: float) -> float:
    """False-positive rate at load ``load`` counted by bucket pairs: ``1 - exp(-2 b load / (2^f - 1))``.

    An absent key with buckets ``{i1, i2}`` and fingerprint ``fp`` is a false positive exactly
    when some stored item has the same two buckets and the same fingerprint (any stored copy of
    ``fp`` in ``i1`` or ``i2`` has ``{i1, i2}`` as its pair, since the alternate bucket depends
    only on bucket and fingerprint). Each of the ``n = load * b * m`` items does so with
    probability ``q = 2 / (m (2^f - 1))``, so ``eps = 1 - (1 - q)^n``, which tends to the value
    returned as the table grows. It differs from :func:`expected_fpr` (the core's formula) by less
    than a factor ``1 - 1/(2^f - 1)``, and matches measurements to within their noise even for
    4-bit fingerprints.
    """
    f = _check_fingerprint_bits(fingerprint_bits)
    b = _check_bucket_size(bucket_size)
    alpha = _check_load(load)
    return -math.expm1(-2.0 * b * alpha / (2.0**f - 1.0))


def fpr_bound(fingerprint_bits: int, bucket_size: int) -> float:
    """False-positive rate of a completely full filter (``Filter.fpr_bound``).

    ``expected_fpr(f, b, 1) = 1 - (1 - 1/(2^f - 1))^(2b)``, which is at most the paper's
    ``2b / 2^f`` for ``b >= 2``. No load reaches it in practice (see :func:`max_load`).
    """
    return expected_fpr(fingerprint_bits, bucket_size, 1.0)


def bits_per_item(fingerprint_bits: int, load: float, *, semi_sort: bool = False) -> float:
    """Table bits per stored item at a load factor: ``f / load`` (semi-sorted: ``(f - 1) / load``).

    Every slot costs ``f`` bits (the table is bit-packed, with no other per-slot state), and only
    the fraction ``load`` of the slots holds items. A semi-sorted bucket of 4 slots takes
    ``4f - 4`` bits.
    """
    f = _check_fingerprint_bits(fingerprint_bits)
    _check_semi_sort(semi_sort, 4, f)
    alpha = _check_load(load)
    if alpha == 0.0:
        raise ValueError("load must be positive")
    return (f - 1 if semi_sort else f) / alpha


def design_load(bucket_size: int, *, semi_sort: bool = False) -> float:
    """Load factor a filter is sized for: 0.80, 0.935 or 0.965 for ``b`` = 2, 4 or 8; 0.955 semi-sorted.

    ``Filter(capacity)`` allocates about ``capacity / design_load(b)`` slots, a little below the
    load where inserts start to fail (:func:`max_load`), so that ``capacity`` keys fit with margin.
    Semi-sorted filters exist to save space and are sized at the load of the first failure of a
    large table (their eviction is the plain ``b = 4`` one): less margin.
    """
    b = _check_bucket_size(bucket_size)
    return float(_shape(1, b, semi_sort=_check_semi_sort(semi_sort, b))["design_load"])


def max_load(bucket_size: int) -> float:
    """EMPIRICAL load factor at which the first insert fails: about 0.85, 0.955, 0.98 for b = 2, 4, 8.

    Not a formula: a measurement, with the default ``max_kicks=500`` and 16-bit fingerprints.
    Filling tables of 10^6 to 10^7 slots with distinct keys until the first
    ``FilterFullError`` (3 seeds each) gave loads of 0.857-0.865 (b=2), 0.956-0.961 (b=4) and
    0.984-0.989 (b=8); the values returned are rounded down, and agree with the 84%, 95% and 98%
    reported by Fan et al. (CoNEXT 2014). Smaller tables reach slightly more; very short
    fingerprints (4-5 bits) reach less, because a bucket then has only ``2^f - 1`` possible
    alternates. :func:`cuckoo.experiments.fill_curve` measures it for any configuration.
    """
    return _MAX_LOAD[_check_bucket_size(bucket_size)]


def bucket_count(capacity: int, bucket_size: int = 4, *, semi_sort: bool = False) -> int:
    """Buckets ``Filter(capacity, bucket_size=b, semi_sort=...)`` allocates.

    ``m = ceil(capacity / (b * design_load(b)))``, at least 8, rounded up to a multiple of 8
    (the table is made of blocks of 8 buckets). At most 2^32 buckets.
    """
    n = _check_int(capacity, "capacity")
    if n <= 0:
        raise ValueError(f"capacity must be positive, got {n}")
    b = _check_bucket_size(bucket_size)
    return int(_shape(n, b, semi_sort=_check_semi_sort(semi_sort, b))["bucket_count"])


def table_bytes(capacity: int, fingerprint_bits: int, bucket_size: int = 4, *, semi_sort: bool = False) -> int:
    """Bytes of the packed table of ``Filter(capacity, fingerprint_bits=f, bucket_size=b, semi_sort=...)``: its ``nbytes``.

    ``ceil(m * b * f / 8)`` with ``m = bucket_count(capacity, b)``: slots are packed back to back,
    ``f`` bits each; semi-sorted, ``ceil(m * (4f - 4) / 8)``. (The allocation adds 16 bytes of
    padding, not counted in ``nbytes``.)
    """
    f = _check_fingerprint_bits(fingerprint_bits)
    b = _check_bucket_size(bucket_size)
    semi = _check_semi_sort(semi_sort, b, f)
    n = _check_int(capacity, "capacity")
    if n <= 0:
        raise ValueError(f"capacity must be positive, got {n}")
    return int(_shape(n, b, fingerprint_bits=f, semi_sort=semi)["table_bytes"])


def bloom_bits_per_item(fpr: float) -> float:
    """Bits per item of an optimally configured Bloom filter: ``log2(1/eps) / ln 2 ~= 1.44 log2(1/eps)``.

    (With ``k = log2(1/eps)`` hash functions and ``m/n = k / ln 2`` bits per item.)
    """
    eps = _check_fpr(fpr)
    return math.log2(1.0 / eps) / math.log(2.0)


def lower_bound_bits_per_item(fpr: float) -> float:
    """Information-theoretic minimum bits per item of any approximate set: ``log2(1/eps)``.

    (Carter, Floyd, Gill, Markowsky and Wegman, 1978, for universes much larger than the set.)
    """
    eps = _check_fpr(fpr)
    return math.log2(1.0 / eps)
