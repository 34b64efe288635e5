"""expansion= of growable filters: the growth factor of each new stage (1..4), its stage
geometry, its false-positive bound (staged.hpp, "Expansion"), persistence and bad values."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo
import _format_ref as ref

FACTORS = [1, 2, 3, 4]
# Bucket and fingerprint-bit steps from one growth stage to the next (3 grows like 4: stages nest
# on powers of two).
RATIO = {1: (1, 0), 2: (2, 1), 3: (4, 2), 4: (4, 2)}


def grown(expansion: int, n: int = 40_000, capacity: int = 1_000, fpr: float = 0.01) -> cuckoo.Filter:
    f = cuckoo.Filter(capacity, fpr, growable=True, expansion=expansion, seed=7)
    f.add_many(np.arange(n, dtype=np.uint64))
    return f


@pytest.mark.parametrize("x", FACTORS)
def test_each_new_stage_grows_by_the_factor(x):
    f = grown(x)
    assert f.expansion == x and len(f.stages) >= 3
    mult, bits = RATIO[x]
    for a, b in zip(f.stages, f.stages[1:]):
        assert b["bucket_count"] == mult * a["bucket_count"]
        assert b["capacity"] == mult * a["capacity"]
        assert b["fingerprint_bits"] == a["fingerprint_bits"] + bits


def test_default_is_two_and_fixed_filters_have_none():
    assert cuckoo.Filter(100, growable=True).expansion == 2
    assert cuckoo.Filter(100).expansion is None
    assert cuckoo.Filter(100, growable=True, expansion=2) == cuckoo.Filter(100, growable=True)


@pytest.mark.parametrize("x", FACTORS)
def test_measured_fpr_within_the_bound(x):
    f = grown(x)
    absent = np.arange(10**9, 10**9 + 200_000, dtype=np.uint64)
    measured = float(f.contains_many(absent).mean())
    assert below_bound(measured, len(absent), f.fpr_bound)
    assert f.expected_fpr <= f.fpr_bound
    first = cuckoo.Filter(1_000, 0.01)
    eps0 = 2 * first.bucket_size / (2**first.fingerprint_bits - 1)  # the first stage's, union bound
    # The documented bound per factor: < 2 eps0 (2), < 4/3 eps0 (3, 4), the first's bound per
    # stage it has or may still add (1: 64 stages at most).
    limit = {1: min(64 * first.fpr_bound, 1.0), 2: 2 * eps0, 3: 4 / 3 * eps0, 4: 4 / 3 * eps0}[x]
    assert f.fpr_bound <= limit * (1 + 1e-9)
    assert cuckoo.Filter(1_000, 0.01, growable=True, expansion=x).fpr_bound <= limit * (1 + 1e-9)


def below_bound(measured: float, n: int, bound: float) -> bool:
    """The measured rate is consistent with a true rate at most `bound`: within 4 standard
    deviations of a binomial sample of n (a false failure about once in 30,000 runs)."""
    return measured <= bound + 4 * (bound * (1 - bound) / n) ** 0.5


@settings(max_examples=15)
@given(x=st.sampled_from(FACTORS), seed=st.integers(0, 2**64 - 1), cap=st.integers(50, 2_000),
       fill=st.integers(1, 30), bits=st.integers(6, 12))
def test_fpr_bound_holds(x, seed, cap, fill, bits):
    f = cuckoo.Filter(cap, fingerprint_bits=bits, growable=True, expansion=x, seed=seed)
    f.add_many(np.arange(cap * fill, dtype=np.uint64))
    absent = np.arange(2**63, 2**63 + 20_000, dtype=np.uint64)
    assert f.expected_fpr <= f.fpr_bound
    assert below_bound(float(f.contains_many(absent).mean()), len(absent), f.fpr_bound)


@settings(max_examples=40)
@given(
    x=st.sampled_from(FACTORS),
    keys=st.lists(st.integers(0, 2**64 - 1), max_size=3000),
    gone=st.sets(st.integers(0, 2999), max_size=200),
    cap=st.integers(1, 300),
    bulk=st.booleans(),
)
def test_no_false_negatives(x, keys, gone, cap, bulk):
    f = cuckoo.Filter(cap, fingerprint_bits=12, growable=True, expansion=x)
    if bulk:
        f.add_many(np.array(keys, dtype=np.uint64))
    else:
        for k in keys:
            f.add(k)
    removed = [keys[i] for i in sorted(gone) if i < len(keys)]
    for k in removed:
        assert f.discard(k)
    left = list(keys)
    for k in removed:
        left.remove(k)
    g = cuckoo.Filter.from_bytes(f.to_bytes())
    for flt in (f, g):
        assert flt.expansion == x
        assert all(k in flt for k in left)
        if left:
            assert flt.contains_many(np.array(left, dtype=np.uint64)).all()


@pytest.mark.parametrize("x", FACTORS)
def test_persistence_round_trip_keeps_the_factor(x, tmp_path):
    f = grown(x, n=5_000)
    copies = [cuckoo.Filter.from_bytes(f.to_bytes()), pickle.loads(pickle.dumps(f)), f.copy()]
    f.save(tmp_path / "f.cuckoo")
    copies.append(cuckoo.Filter.load(tmp_path / "f.cuckoo"))
    for g in copies:
        assert g == f and g.expansion == x
        g.add_many(np.arange(5_000, 60_000, dtype=np.uint64))  # grows on by the same factor
        mult, _ = RATIO[x]
        assert g.stages[-1]["bucket_count"] == mult * g.stages[-2]["bucket_count"]
    # The default factor is written as before (flags 1, reserved 0): older readers still read it.
    head = ref.parse(grown(2, n=5_000).to_bytes())
    assert head["flags"] == 1 and head["reserved"] == 0
    if x != 2:
        head = ref.parse(f.to_bytes())
        assert head["flags"] == 3 and head["reserved"] == x


def test_filters_that_differ_only_in_expansion_are_not_equal():
    assert cuckoo.Filter(100, growable=True, expansion=1) != cuckoo.Filter(100, growable=True, expansion=4)


@pytest.mark.parametrize("bad", [0, 5, -1, 2**70])
def test_out_of_range_factor_is_refused(bad):
    with pytest.raises(ValueError, match="expansion must be between 1 and 4"):
        cuckoo.Filter(100, growable=True, expansion=bad)


@pytest.mark.parametrize("bad", [2.0, "2", True])
def test_factor_of_another_type_is_refused(bad):
    with pytest.raises(TypeError, match="expansion must be an int"):
        cuckoo.Filter(100, growable=True, expansion=bad)


def test_factor_of_a_fixed_filter_is_refused():
    with pytest.raises(ValueError, match="expansion needs growable=True"):
        cuckoo.Filter(100, expansion=2)


@pytest.mark.parametrize("x", FACTORS)
def test_merge_and_union_keep_every_key(x):
    a = cuckoo.Filter(200, fingerprint_bits=14, growable=True, expansion=x, seed=1)
    b = cuckoo.Filter(200, fingerprint_bits=14, growable=True, expansion=x, seed=1)
    ka = np.arange(0, 3_000, dtype=np.uint64)
    kb = np.arange(2_000, 6_000, dtype=np.uint64)
    a.add_unique_many(ka)
    b.add_unique_many(kb)
    for merged in (a | b, a + b):
        assert merged.expansion == x
        assert merged.contains_many(np.concatenate([ka, kb])).all()
