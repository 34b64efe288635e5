"""cuckoo.theory: the sizing formulas agree with real filters and with their documented formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo
from cuckoo import theory

BUCKETS = (2, 4, 8)


# ---- fingerprint_bits ------------------------------------------------------------------------


def _fprs():
    xs = list(np.geomspace(1e-9, 0.99, 400))
    # exact powers of two of 2b/fpr, and their neighbours: where a ceil is most fragile
    for b in BUCKETS:
        for f in range(1, 33):
            x = 2.0 * b / 2.0**f
            xs += [x, math.nextafter(x, 0.0), math.nextafter(x, 1.0)]
    return [float(x) for x in xs if 0.0 < x < 1.0]


@pytest.mark.parametrize("b", BUCKETS)
def test_fingerprint_bits_matches_filter(b):
    for fpr in _fprs():
        try:
            want = cuckoo.Filter(16, fpr=fpr, bucket_size=b).fingerprint_bits
        except ValueError:
            with pytest.raises(ValueError, match="32 fingerprint bits"):
                theory.fingerprint_bits(fpr, b)
            continue
        assert theory.fingerprint_bits(fpr, b) == want, (fpr, b)


@pytest.mark.parametrize("b", BUCKETS)
def test_fingerprint_bits_is_smallest_width_meeting_2b_over_2f(b):
    for fpr in np.geomspace(1e-8, 0.9, 200):
        f = theory.fingerprint_bits(float(fpr), b)
        assert 2 * b / 2**f <= fpr * (1 + 1e-9)
        assert f == theory.MIN_FINGERPRINT_BITS or 2 * b / 2 ** (f - 1) > fpr
        # and the filter stays below the target even when completely full
        assert theory.fpr_bound(f, b) <= fpr


def test_fingerprint_bits_default_bucket_size_and_examples():
    assert theory.fingerprint_bits(0.001) == 13  # log2(8 / 0.001) = 12.97
    assert theory.fingerprint_bits(0.01, 2) == 9  # log2(4 / 0.01) = 8.64
    assert theory.fingerprint_bits(0.5) == 4  # clamped below at 4 bits
    assert theory.fingerprint_bits(8 / 2**10) == 10  # exact power of two: no extra bit


# ---- expected_fpr, exact_fpr, fpr_bound --------------------------------------------------------


@pytest.mark.parametrize("b", BUCKETS)
@pytest.mark.parametrize("f", [4, 5, 8, 12, 16, 24, 32])
def test_expected_fpr_and_bound_match_filter(f, b):
    flt = cuckoo.Filter(2000, fingerprint_bits=f, bucket_size=b, seed=f * b)
    assert theory.fpr_bound(f, b) == pytest.approx(flt.fpr_bound, rel=1e-12, abs=0)
    assert theory.expected_fpr(f, b, 0.0) == 0.0 == flt.expected_fpr
    for chunk in range(4):
        flt.add_many(np.arange(chunk * 400, (chunk + 1) * 400))
        assert theory.expected_fpr(f, b, flt.load_factor) == pytest.approx(flt.expected_fpr, rel=1e-12, abs=0)


@pytest.mark.parametrize("b", BUCKETS)
@pytest.mark.parametrize("f", [4, 6, 10, 16, 32])
def test_expected_fpr_formula(f, b):
    p = 1.0 / (2**f - 1)
    for load in (0.0, 0.1, 0.5, 0.95, 1.0):
        want = 1.0 - (1.0 - p) ** (2 * b * load)
        assert theory.expected_fpr(f, b, load) == pytest.approx(want, rel=1e-9, abs=1e-15)
        exact = -math.expm1(-2 * b * load / (2**f - 1))
        assert theory.exact_fpr(f, b, load) == pytest.approx(exact, rel=1e-12, abs=0)
        # the core's formula is the (slightly) pessimistic one, by a relative ~1/(2 (2^f - 1))
        assert theory.exact_fpr(f, b, load) <= theory.expected_fpr(f, b, load)
        assert theory.exact_fpr(f, b, load) >= (1.0 - p) * theory.expected_fpr(f, b, load)
    # both approach 2 b load / 2^f for long fingerprints
    if f >= 16:
        assert theory.expected_fpr(f, b, 0.9) == pytest.approx(2 * b * 0.9 / 2**f, rel=1e-3)
        assert theory.exact_fpr(f, b, 0.9) == pytest.approx(2 * b * 0.9 / 2**f, rel=1e-3)


def test_fpr_bound_is_below_paper_bound_and_monotone():
    for b in BUCKETS:
        prev = 1.0
        for f in range(4, 33):
            bound = theory.fpr_bound(f, b)
            assert bound == theory.expected_fpr(f, b, 1.0)
            assert bound <= 2 * b / 2**f
            assert bound < prev
            prev = bound
        loads = np.linspace(0, 1, 21)
        values = [theory.expected_fpr(8, b, float(x)) for x in loads]
        assert all(x < y for x, y in zip(values, values[1:]))


# ---- sizing: bucket_count, table_bytes, bits_per_item -----------------------------------------


def _edge_capacities(b):
    caps = set(range(1, 400)) | {10**k for k in range(1, 7)} | {10**k + 1 for k in range(1, 7)}
    # capacities at exact multiples of b * design_load: where ceil(capacity / (b * load)) is fragile
    per_bucket = b * theory.design_load(b)
    for k in list(range(1, 300)) + [10**4, 12345, 10**5, 2**17, 10**6]:
        c = round(k * per_bucket)
        caps |= {c - 1, c, c + 1, round(k * 8 * per_bucket)}
    return sorted(c for c in caps if c > 0)


@pytest.mark.parametrize("b", BUCKETS)
def test_table_bytes_equals_nbytes_at_edge_capacities(b):
    for i, cap in enumerate(_edge_capacities(b)):
        f = 4 + i % 29  # every width 4..32 comes up
        flt = cuckoo.Filter(cap, fingerprint_bits=f, bucket_size=b)
        assert theory.bucket_count(cap, b) == flt.bucket_count, (cap, b)
        assert theory.table_bytes(cap, f, b) == flt.nbytes, (cap, f, b)


@settings(max_examples=300, deadline=None)
@given(
    cap=st.integers(1, 3 * 10**6),
    f=st.integers(4, 32),
    b=st.sampled_from(BUCKETS),
)
def test_table_bytes_equals_nbytes(cap, f, b):
    flt = cuckoo.Filter(cap, fingerprint_bits=f, bucket_size=b)
    assert theory.bucket_count(cap, b) == flt.bucket_count
    assert theory.table_bytes(cap, f, b) == flt.nbytes
    m = flt.bucket_count
    assert flt.nbytes == math.ceil(m * b * f / 8)
    assert m % 8 == 0 and m * b * theory.design_load(b) >= cap


@pytest.mark.parametrize("b", BUCKETS)
def test_bits_per_item_matches_filter_at_capacity(b):
    for f in (4, 7, 13, 16, 32):
        for cap in (10**5, 10**6 + 7):
            flt = cuckoo.Filter(cap, fingerprint_bits=f, bucket_size=b)
            # Filter.bits_per_item = 8 nbytes / capacity = f / (capacity / slots), up to rounding
            # of the bucket count to a multiple of 8 and of the bytes
            assert theory.bits_per_item(f, cap / flt.slot_count) == pytest.approx(flt.bits_per_item, rel=1e-5)
            assert theory.bits_per_item(f, theory.design_load(b)) == pytest.approx(flt.bits_per_item, rel=1e-3)
    assert theory.bits_per_item(12, 0.5) == 24.0
    assert theory.bits_per_item(16, 1.0) == 16.0


def test_design_and_max_load():
    assert [theory.design_load(b) for b in BUCKETS] == [0.80, 0.935, 0.965]
    assert [theory.max_load(b) for b in BUCKETS] == [0.85, 0.955, 0.98]
    for b in BUCKETS:
        assert theory.design_load(b) < theory.max_load(b) < 1.0
        assert cuckoo.Filter(10**5, bucket_size=b).capacity == 10**5
        assert "EMPIRICAL" in theory.max_load.__doc__


@pytest.mark.parametrize("b", BUCKETS)
def test_max_load_is_reached_by_a_real_filter(b):
    # max_load is an empirical figure, rounded down from measurements; a 10^5-slot filter with
    # long fingerprints gets past it before its first failed insert (measured: 0.86-0.88, 0.96-0.97,
    # 0.99 for b = 2, 4, 8)
    flt = cuckoo.Filter(10**5, fingerprint_bits=16, bucket_size=b, seed=7)
    with pytest.raises(cuckoo.FilterFullError):
        flt.add_many(np.arange(flt.slot_count + 1, dtype=np.uint64))
    assert flt.load_factor >= theory.max_load(b)


# ---- Bloom and lower bound -----------------------------------------------------------------------


def test_bloom_and_lower_bound():
    for eps in (0.5, 0.1, 0.01, 1e-3, 1e-6, 1e-12):
        lb = theory.lower_bound_bits_per_item(eps)
        assert lb == pytest.approx(-math.log2(eps), rel=1e-12)
        assert theory.bloom_bits_per_item(eps) == pytest.approx(lb / math.log(2), rel=1e-12)
    assert theory.lower_bound_bits_per_item(2**-10) == pytest.approx(10.0)
    assert theory.bloom_bits_per_item(0.01) == pytest.approx(9.585, abs=1e-3)
    # the cuckoo filter's space at its design load beats Bloom for small rates, not for large ones
    for eps, cuckoo_wins in ((0.05, False), (1e-4, True), (1e-6, True)):
        f = theory.fingerprint_bits(eps, 4)
        assert (theory.bits_per_item(f, theory.design_load(4)) < theory.bloom_bits_per_item(eps)) is cuckoo_wins


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: theory.fingerprint_bits(0.0), ValueError, "fpr must be in"),
        (lambda: theory.fingerprint_bits(1.0), ValueError, "fpr must be in"),
        (lambda: theory.fingerprint_bits(float("nan")), ValueError, "fpr must be in"),
        (lambda: theory.fingerprint_bits("0.01"), TypeError, "fpr must be a float"),
        (lambda: theory.fingerprint_bits(None), TypeError, "fpr must be a float"),
        (lambda: theory.fingerprint_bits(1e-12), ValueError, "32 fingerprint bits"),
        (lambda: theory.fingerprint_bits(0.01, 3), ValueError, "bucket_size must be 2, 4 or 8"),
        (lambda: theory.fingerprint_bits(0.01, 4.0), TypeError, "bucket_size must be an int"),
        (lambda: theory.expected_fpr(3, 4, 0.5), ValueError, "fingerprint_bits must be between 4 and 32"),
        (lambda: theory.expected_fpr(33, 4, 0.5), ValueError, "fingerprint_bits must be between 4 and 32"),
        (lambda: theory.expected_fpr(True, 4, 0.5), TypeError, "fingerprint_bits must be an int"),
        (lambda: theory.expected_fpr(8, 4, 1.5), ValueError, "load must be in"),
        (lambda: theory.expected_fpr(8, 4, -0.1), ValueError, "load must be in"),
        (lambda: theory.expected_fpr(8, 4, "0.5"), TypeError, "load must be a float"),
        (lambda: theory.fpr_bound(8, 16), ValueError, "bucket_size"),
        (lambda: theory.bits_per_item(8, 0.0), ValueError, "load must be positive"),
        (lambda: theory.bucket_count(0), ValueError, "capacity must be positive"),
        (lambda: theory.bucket_count(-5), ValueError, "capacity must be positive"),
        (lambda: theory.bucket_count(2**40, 2), ValueError, "at most 2\\^32 buckets"),
        (lambda: theory.table_bytes(100.0, 8, 4), TypeError, "capacity must be an int"),
        (lambda: theory.table_bytes(100, 2, 4), ValueError, "fingerprint_bits"),
        (lambda: theory.design_load(1), ValueError, "bucket_size"),
        (lambda: theory.max_load(16), ValueError, "bucket_size"),
        (lambda: theory.bloom_bits_per_item(0), ValueError, "fpr must be in"),
        (lambda: theory.lower_bound_bits_per_item(2), ValueError, "fpr must be in"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_numpy_scalars_accepted():
    assert theory.fingerprint_bits(np.float64(0.001), np.int64(4)) == 13
    assert theory.expected_fpr(np.int32(8), 4, np.float32(0.5)) == pytest.approx(theory.expected_fpr(8, 4, 0.5), rel=1e-6)
    assert theory.table_bytes(np.uint32(1000), np.int8(12), np.int16(2)) == theory.table_bytes(1000, 12, 2)


def test_docstring_examples():
    import doctest

    assert doctest.testmod(theory).failed == 0
