"""Filter & Filter (intersection, issue 49): like collections.Counter's &, on fingerprints.

Each (bucket pair, fingerprint) keeps the smaller of its two counts, so a key added to both
filters is always kept (at least min of its two counts), and a key in only one stays exactly when
the other filter has a false positive for it (docs/distributed.md, "Intersection")."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo

# A key as the filter hashes it: str is hashed as its UTF-8 bytes, so "a" and b"a" are one key.
key_strategy = st.one_of(st.integers(0, 2**64 - 1), st.binary(max_size=12), st.text(max_size=6))


def canonical(key):
    return key.encode() if isinstance(key, str) else key


# Each key with 1 to 3 copies: a multiset (three copies fit the 2b >= 4 slots of a bucket pair).
multiset_strategy = st.dictionaries(key_strategy, st.integers(1, 3), max_size=60)

# (bucket_size, semi_sort): plain buckets of every size, and semi-sorted ones (b = 4 only).
layout_strategy = st.sampled_from([(2, False), (4, False), (8, False), (4, True)])


def distinct(counts):
    """One entry per key as hashed (the first of "a" and b"a" wins), keeping its original type."""
    out, seen = {}, set()
    for key, n in counts.items():
        if canonical(key) not in seen:
            seen.add(canonical(key))
            out[key] = n
    return out


# Every filter of the property test has this capacity (an intersection needs equal ones); a
# growable one also gets 3000 filler keys of its own, which make it grow to three stages.
CAPACITY = 400


def fillers(base):
    return {2**63 + base + i: 1 for i in range(3000)}


def filled(counts, b, semi, growable):
    f = cuckoo.Filter(CAPACITY, fingerprint_bits=12, bucket_size=b, semi_sort=semi, seed=7, growable=growable)
    for key, n in counts.items():
        for _ in range(n):
            f.add(key)
    return f


def model(counts):
    out: Counter = Counter()
    for key, n in counts.items():
        out[canonical(key)] += n
    return out


@settings(max_examples=80, deadline=None)
@given(multiset_strategy, multiset_strategy, multiset_strategy, layout_strategy, st.booleans(), st.booleans())
def test_keys_in_both_are_kept_with_the_smaller_count(xs, ys, shared, layout, grow_a, grow_b):
    b, semi = layout
    # Shared keys go into both, with counts of their own on each side (a Counter of each).
    xs = distinct({**xs, **shared, **(fillers(0) if grow_a else {})})
    ys = distinct({**ys, **{k: 1 + (n % 3) for k, n in shared.items()}, **(fillers(10**6) if grow_b else {})})
    a = filled(xs, b, semi, grow_a)
    o = filled(ys, b, semi, grow_b)
    assert len(a.stages) >= 3 if grow_a else len(a.stages) == 1
    a_before, o_before = a.copy(), o.copy()
    if not a.growable and len(o.stages) > 1:
        # As for |: a fixed filter cannot add the stages a grown one's finer entries need.
        with pytest.raises(ValueError, match="the other filter has grown and this one is not growable"):
            a & o
        assert a == a_before and o == o_before
        return
    r = a & o
    assert a == a_before and o == o_before  # operands unchanged
    ma, mo = model(xs), model(ys)
    for k in ma.keys() & mo.keys():
        assert k in r
        assert r.count(k) >= min(ma[k], mo[k])
    probes = list(ma) + list(mo) + list(range(10**6, 10**6 + 200))
    for k in probes:
        # Membership is exactly `in a and in o`, also across stages: a coarse entry of a covered
        # only by finer ones of o gives way to them.
        assert (k in r) == (k in a and k in o)
    # The in-place form and the method give the same filter.
    c = a.copy()
    c &= o
    assert c == r and a.intersection(o) == r
    if o.growable or len(a.stages) == 1:  # o & a is defined too
        swapped = o & a
        for k in probes:
            assert (k in r) == (k in swapped)  # commutative membership
    if len(a.stages) == 1 and len(o.stages) == 1:
        # One stage each: an exact per-entry min, so counts are the smaller count, and the
        # result is the same filter either way round.
        for k in probes:
            assert r.count(k) == min(a.count(k), o.count(k))
        assert len(r) <= min(len(a), len(o))
        if a.growable == o.growable:
            assert r == (o & a)


def test_grown_filters_keep_every_shared_key_and_are_compared_across_stages():
    # The two filters store the shared keys in different stages: 3000..5999 are in a's last
    # stages and in o's first ones.
    a = cuckoo.Filter(1000, fpr=0.001, growable=True, seed=5)
    o = cuckoo.Filter(1000, fpr=0.001, growable=True, seed=5)
    a.add_unique_many(np.arange(0, 6000))
    o.add_unique_many(np.arange(3000, 9000))
    assert len(a.stages) == len(o.stages) == 3
    shared = np.arange(3000, 6000)
    for r in (a & o, o & a):
        assert r.contains_many(shared).all()
        assert 3000 <= len(r) <= 3000 + 60
    fixed = cuckoo.Filter(1000, fpr=0.001, seed=5)
    fixed.add_unique_many(np.arange(0, 900))
    assert (a & fixed).contains_many(np.arange(0, 900)).all() and (a & fixed).growable
    before = fixed.copy()
    with pytest.raises(ValueError, match="use other & self"):
        fixed &= a
    assert fixed == before


@pytest.mark.parametrize("b, semi", [(2, False), (4, False), (8, False), (4, True)])
@pytest.mark.parametrize("growable", [False, True])
def test_with_itself_and_with_an_empty_filter(b, semi, growable):
    a = cuckoo.Filter(16 if growable else 5000, fingerprint_bits=12, bucket_size=b, semi_sort=semi, seed=2,
                      growable=growable)
    a.add_many(list(range(3000)) + list(range(100)))  # 100 keys twice
    before = a.copy()
    assert (a & a) == a
    a &= a
    assert a == before
    empty = cuckoo.Filter(16 if growable else 5000, fingerprint_bits=12, bucket_size=b, semi_sort=semi, seed=2,
                          growable=growable)
    for r in (a & empty, empty & a):
        assert len(r) == 0 and not r.contains_many(range(3000)).any()
    assert a == before


@pytest.mark.parametrize(
    "other, message",
    [
        (dict(capacity=1000, seed=2), "seeds"),
        (dict(capacity=1000, seed=1, hash_algorithm="xxh64"), "hash algorithms"),
        (dict(capacity=1000, seed=1, bucket_size=2), "bucket sizes"),
        (dict(capacity=1000, seed=1, fingerprint_bits=9), "fingerprint widths"),
        (dict(capacity=5000, seed=1), "capacities"),
        (dict(capacity=1000, seed=1, semi_sort=True), "semi-sorted"),
    ],
)
def test_mismatched_filters_raise_and_change_nothing(other, message):
    a = cuckoo.Filter(1000, seed=1, fingerprint_bits=12)
    a.add_many(range(500))
    o = cuckoo.Filter(**{"fingerprint_bits": 12, **other})
    o.add_many(range(400, 600))
    a_before, o_before = a.copy(), o.copy()
    with pytest.raises(ValueError, match="cannot intersect filters: .*" + message):
        a & o
    with pytest.raises(ValueError, match=message):
        a &= o
    with pytest.raises(ValueError, match=message):
        o.intersection(a)
    assert a == a_before and o == o_before


def test_non_filters_are_refused():
    a = cuckoo.Filter(1000)
    assert a.__and__(42) is NotImplemented
    with pytest.raises(TypeError):
        a & {1, 2}  # noqa: B018
    with pytest.raises(TypeError, match="intersection needs a cuckoo.Filter, not set"):
        a.intersection({1, 2})


def test_read_only_filter_refuses_in_place_but_intersects_into_a_copy(tmp_path):
    a = cuckoo.Filter(1000, seed=1)
    a.add_many(range(500))
    path = tmp_path / "a.cuckoo"
    a.save(path)
    mapped = cuckoo.Filter.load(path, mmap=True)
    o = cuckoo.Filter(1000, seed=1)
    o.add_many(range(250, 750))
    assert (mapped & o).contains_many(range(250, 500)).all()
    with pytest.raises(cuckoo.ReadOnlyError):
        mapped &= o
    assert mapped == a


# ---- false-positive rate ----

N = 100_000


def fpr_filters(growable):
    """a holds 0..2N-1, o holds N..3N-1: N keys shared, N only in a, N only in o. 8-bit
    fingerprints make the rates large enough to measure with N keys."""
    kwargs = dict(fingerprint_bits=8, seed=3, growable=growable)
    capacity = N // 8 if growable else 2 * N
    a, o = cuckoo.Filter(capacity, **kwargs), cuckoo.Filter(capacity, **kwargs)
    a.add_unique_many(np.arange(0, 2 * N, dtype=np.uint64))
    o.add_unique_many(np.arange(N, 3 * N, dtype=np.uint64))
    return a, o


def margin(p, n):
    return 6 * (p * (1 - p) / n) ** 0.5 + 1 / n  # six standard deviations of a binomial rate


def test_fpr_of_keys_in_only_one_filter_is_the_other_filters_fpr():
    a, o = fpr_filters(growable=False)
    r = a & o
    only_a = np.arange(0, N, dtype=np.uint64)
    only_o = np.arange(2 * N, 3 * N, dtype=np.uint64)
    neither = np.arange(10**9, 10**9 + 10 * N, dtype=np.uint64)
    assert r.contains_many(np.arange(N, 2 * N, dtype=np.uint64)).all()
    # Exactly the other filter's false positives (one stage each: membership is `in a and in o`).
    assert (r.contains_many(only_a) == o.contains_many(only_a)).all()
    assert (r.contains_many(only_o) == a.contains_many(only_o)).all()
    for keys, other in ((only_a, o), (only_o, a)):
        measured = r.contains_many(keys).mean()
        eps = other.expected_fpr  # 1 - (1 - 1/(2^f - 1))^(2 b load): the documented bound
        assert measured <= eps + margin(eps, N)
        assert measured >= eps - margin(eps, N)  # the bound is tight: the rate is that FPR
        assert measured <= other.fpr_bound
    # A key in neither is a false positive of a & o itself: the rate of a filter at its load
    # (the shared keys plus the kept false positives), below both operands' rates.
    eps_r = r.expected_fpr
    assert eps_r <= min(a.expected_fpr, o.expected_fpr)
    measured = r.contains_many(neither).mean()
    assert eps_r - margin(eps_r, 10 * N) <= measured <= eps_r + margin(eps_r, 10 * N)


def test_fpr_of_grown_filters_is_the_other_filters_fpr():
    a, o = fpr_filters(growable=True)
    assert len(a.stages) >= 3 and len(o.stages) >= 3
    for r, mine, other in ((a & o, a, o), (o & a, o, a)):
        assert r.contains_many(np.arange(N, 2 * N, dtype=np.uint64)).all()
        only_mine = np.arange(0, N, dtype=np.uint64) if mine is a else np.arange(2 * N, 3 * N, dtype=np.uint64)
        kept = r.contains_many(only_mine)
        # A coarse entry here that only finer entries of the other filter cover is replaced by
        # them, so a key of one filter stays exactly when the other matches it too...
        assert (kept == other.contains_many(only_mine)).all()
        # ...and the rate is the other filter's over its stages (1 - prod(1 - eps_stage)).
        eps = other.expected_fpr
        assert kept.mean() <= eps + margin(eps, N)
        assert kept.mean() >= eps / 2  # mostly kept where the other has a false positive
