"""Semi-sorted buckets (issue 21): the Python surface of ``Filter(..., semi_sort=True)``.

The invariants (no false negatives, duality, failed insert changes nothing, bulk == scalar, the
FPR bound, round trips) are tested for semi-sorted filters by the shared property and guarantee
tests (test_properties.py, test_guarantees.py, test_persistence.py draw or parametrize
``semi_sort``); here: arguments, properties, merges, growth, theory and fpr_sweep."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo
from cuckoo import FilterFullError, theory
from cuckoo.experiments import fpr_sweep


def test_semi_sort_argument_and_property():
    f = cuckoo.Filter(10_000, fpr=0.001, semi_sort=True)
    assert f.semi_sort is True
    assert cuckoo.Filter(10_000).semi_sort is False
    assert f.fingerprint_bits == 13
    assert f.nbytes == theory.table_bytes(10_000, 13, semi_sort=True) == f.bucket_count * 48 // 8
    assert f.bucket_count == theory.bucket_count(10_000, semi_sort=True)
    assert f.stages[0]["semi_sort"] is True
    assert "semi-sorted" in repr(f) and "semi-sorted" in f._repr_html_()
    assert "semi-sorted" not in repr(cuckoo.Filter(10))


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"semi_sort": 1}, TypeError, "semi_sort must be a bool"),
        ({"semi_sort": None}, TypeError, "semi_sort must be a bool"),
        ({"semi_sort": True, "bucket_size": 2}, ValueError, "bucket_size=4"),
        ({"semi_sort": True, "bucket_size": 8}, ValueError, "bucket_size=4"),
        ({"semi_sort": True, "fingerprint_bits": 17}, ValueError, "at most 16"),
        ({"semi_sort": True, "fpr": 1e-5}, ValueError, "at most 16"),  # needs 20 bits
    ],
)
def test_bad_semi_sort_arguments(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        cuckoo.Filter(1000, **kwargs)


def test_copy_pickle_equality():
    f = cuckoo.Filter(1000, fpr=0.01, semi_sort=True, seed=4)
    keys = np.arange(900, dtype=np.uint64)
    f.add_many(keys)
    for g in (f.copy(), copy.deepcopy(f), pickle.loads(pickle.dumps(f)), cuckoo.Filter.from_bytes(f.to_bytes())):
        assert g == f and g.semi_sort
        assert g.contains_many(keys).all()
    plain = cuckoo.Filter(1000, fpr=0.01, seed=4)
    plain.add_many(keys)
    assert plain != f  # another layout
    assert (f.count_many(keys) >= 1).all()


def test_merge_with_a_plain_filter_is_refused_and_changes_nothing():
    a = cuckoo.Filter(1000, fpr=0.01, semi_sort=True, seed=1)
    b = cuckoo.Filter(1000, fpr=0.01, seed=1)
    a.add_many([1, 2, 3])
    b.add_many([4, 5])
    before = a.copy()
    for op in (lambda: a | b, lambda: a + b, lambda: a.merge(b), lambda: b.merge(a)):
        with pytest.raises(ValueError, match="semi-sorted"):
            op()
    assert a == before


@settings(max_examples=40, deadline=None)
@given(xs=st.lists(st.integers(0, 300), max_size=200), ys=st.lists(st.integers(0, 300), max_size=200))
def test_merges_of_semi_sorted_filters(xs, ys):
    """| keeps the larger count of each key, + adds them, as for plain filters."""
    # A filter holds at most 2 x 4 copies of a key and + adds counts: at most 4 copies a side
    # (hypothesis found xs = [0] * 9, whose ninth add raises FilterFullError by design).
    xs = [k for i, k in enumerate(xs) if xs[:i].count(k) < 4]
    ys = [k for i, k in enumerate(ys) if ys[:i].count(k) < 4]
    a = cuckoo.Filter(500, fingerprint_bits=16, semi_sort=True, seed=2)
    b = cuckoo.Filter(500, fingerprint_bits=16, semi_sort=True, seed=2)
    for k in xs:
        a.add(k)
    for k in ys:
        b.add(k)
    keys = sorted(set(xs) | set(ys))
    union, total = a | b, a + b
    assert union.semi_sort and total.semi_sort
    for k in keys:
        assert union.count(k) == max(a.count(k), b.count(k))
        assert total.count(k) == a.count(k) + b.count(k)


def test_growable_semi_sorted_filter():
    """Stages stay semi-sorted up to 16-bit fingerprints, then are plain; nothing is lost."""
    f = cuckoo.Filter(1000, fingerprint_bits=14, semi_sort=True, growable=True, seed=3)
    keys = np.random.default_rng(3).integers(0, 2**63, size=30_000, dtype=np.uint64)
    assert f.add_many(keys) == len(keys)
    semi = [st["semi_sort"] for st in f.stages]
    bits = [st["fingerprint_bits"] for st in f.stages]
    assert semi == [b <= 16 for b in bits] and len(semi) >= 4
    assert f.contains_many(keys).all()
    assert cuckoo.Filter.from_bytes(f.to_bytes()) == f


def test_failed_insert_changes_nothing():
    f = cuckoo.Filter(64, fingerprint_bits=8, semi_sort=True, max_kicks=10, seed=9)
    keys = np.random.default_rng(9).integers(0, 2**63, size=1000, dtype=np.uint64)
    with pytest.raises(FilterFullError) as info:
        f.add_many(keys)
    n = info.value.inserted
    before = f.to_bytes()
    with pytest.raises(FilterFullError):
        f.add(int(keys[n]))
    assert f.to_bytes() == before
    assert f.contains_many(keys[:n]).all()


def test_theory_functions():
    assert theory.design_load(4, semi_sort=True) == 0.955
    assert theory.bits_per_item(13, 0.955, semi_sort=True) == pytest.approx(12 / 0.955)
    assert theory.bits_per_item(13, 0.955, semi_sort=True) <= 12.6
    with pytest.raises(ValueError, match="bucket_size=4"):
        theory.design_load(2, semi_sort=True)
    with pytest.raises(ValueError, match="at most 16"):
        theory.table_bytes(1000, 17, semi_sort=True)
    with pytest.raises(TypeError, match="semi_sort must be a bool"):
        theory.bucket_count(1000, semi_sort="yes")
    for capacity in (1, 1000, 12_345, 10**6):
        for f in (4, 12, 13, 16):
            flt = cuckoo.Filter(capacity, fingerprint_bits=f, semi_sort=True)
            assert flt.nbytes == theory.table_bytes(capacity, f, semi_sort=True)


def test_fpr_sweep_with_semi_sort():
    rows = fpr_sweep(fingerprint_bits=[8, 17], bucket_sizes=[2, 4], semi_sort=(False, True), capacity=20_000,
                     n_negatives=100_000, as_frame=False)
    got = [(r["bucket_size"], r["fingerprint_bits"], r["semi_sort"]) for r in rows]
    # semi-sorted rows only where they exist (b = 4, f <= 16)
    assert got == [(2, 8, False), (2, 17, False), (4, 8, False), (4, 8, True), (4, 17, False)]
    plain, semi = rows[2], rows[3]
    assert semi["bits_per_item"] < plain["bits_per_item"]
    assert semi["ci_low"] <= semi["expected_fpr"] * 1.3
    with pytest.raises(ValueError, match="semi_sort"):
        fpr_sweep(fingerprint_bits=[8], bucket_sizes=[2], semi_sort=True, capacity=1000, as_frame=False)
