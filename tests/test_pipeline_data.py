"""Real pipeline data (issue 19): repeated keys, set unions, hostile keys, freed space, theory.

The hostile keys are computed here, in closed form, for seed 0 (tests/_xxh3_inverse.py): distinct
integer keys that share one bucket pair and one fingerprint, as an attacker who knows the seed can
make them for any filter. With a secret seed (seed="random") the same keys are just keys.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo
from cuckoo import experiments

from _xxh3_inverse import colliding_keys, keys_with_hash, xxh3_8


def crafted_groups(f: cuckoo.Filter, groups: int, size: int) -> np.ndarray:
    """`groups` groups of `size` keys; the keys of a group share bucket pair and fingerprint in f's
    first stage (for f's seed 0), and the groups lie in different buckets."""
    m = f.bucket_count if len(f.stages) == 1 else f.stages[0]["bucket_count"]
    step = max(1, m // groups)
    return np.concatenate(
        [colliding_keys(size, m, fingerprint_hash=0x9E3779B9 ^ g, start=g * step) for g in range(groups)]
    )


# ---- the closed-form inverse really inverts the filter's hash ------------------------------------


def test_inverse_round_trips_and_collides_in_the_filter():
    rng = np.random.default_rng(1)
    words = rng.integers(0, 2**64, size=1000, dtype=np.uint64)
    assert (keys_with_hash(xxh3_8(words)) == words).all()
    f = cuckoo.Filter(10**6)
    keys = colliding_keys(40, f.bucket_count)
    assert len(set(keys.tolist())) == 40
    assert len({f.bucket_indices(int(k)) for k in keys}) == 1, "all 40 keys: one bucket pair, one fingerprint"


# ---- repeated keys -------------------------------------------------------------------------------


@pytest.mark.parametrize("b", [2, 4, 8])
def test_too_many_copies_of_one_key_says_so_and_changes_nothing(b):
    f = cuckoo.Filter(1000, bucket_size=b)
    f.add("other")
    for _ in range(2 * b):
        f.add("same")
    before = f.copy()
    with pytest.raises(cuckoo.FilterFullError, match=r"fills both of its buckets.*add_unique") as info:
        f.add("same")
    assert info.value.reason == "copies" and f == before
    assert f.add_unique("same") is False and f == before
    with pytest.raises(cuckoo.FilterFullError, match="add_unique") as info:
        f.add_many(np.repeat(np.arange(10), 20))
    assert info.value.inserted == 2 * b and info.value.reason == "copies"


@pytest.mark.parametrize("b", [2, 4, 8])
def test_ten_thousand_copies_never_grow_a_growable_filter(b):
    copies = ["same"] * 10**4
    # add: the first 2b copies go in, then a clear error every time, never a new stage
    f = cuckoo.Filter(1000, bucket_size=b, growable=True)
    nbytes = f.nbytes
    for i in range(10**4):
        try:
            f.add("same")
        except cuckoo.FilterFullError as e:
            assert i >= 2 * b and e.reason == "copies"
    assert len(f) == 2 * b and len(f.stages) == 1 and f.nbytes == nbytes
    # add_many: stops at copy 2b + 1 with the same error
    g = cuckoo.Filter(1000, bucket_size=b, growable=True)
    with pytest.raises(cuckoo.FilterFullError, match="add_unique") as info:
        g.add_many(copies)
    assert info.value.inserted == 2 * b and len(g.stages) == 1
    # update follows set.update: each key once, the other copies are no-ops
    h = cuckoo.Filter(1000, bucket_size=b, growable=True)
    h.update(copies, np.array([7] * 10**4))
    assert len(h) == 2 and len(h.stages) == 1 and "same" in h and 7 in h
    assert h.add_unique_many(copies).sum() == 0


def test_update_follows_set_semantics():
    f = cuckoo.Filter(1000)
    f.update(["a", "b", "a"])
    assert len(f) == 2
    f.update(["a"], ["c", "c"])
    assert len(f) == 3 and f.count("a") == 1
    # add_many is the multiset call
    f.add_many(["a", "a"])
    assert f.count("a") == 3


def test_failure_in_an_empty_stage_does_not_grow():
    # Distinct keys that share one bucket pair and fingerprint behave as copies of one key.
    f = cuckoo.Filter(100_000, growable=True)
    keys = colliding_keys(128, f.bucket_count)
    with pytest.raises(cuckoo.FilterFullError, match="fills both of its buckets"):
        f.add_many(keys)
    assert len(f) == 8 and len(f.stages) == 1


# ---- set union and multiset sum (Counter semantics) -----------------------------------------------

keys_st = st.lists(st.integers(0, 400), max_size=120)


def _set_built(keys, **kw) -> cuckoo.Filter:
    f = cuckoo.Filter(1024, fingerprint_bits=kw.pop("fingerprint_bits", 16), seed=5, **kw)  # room for 3 x 120 keys
    f.add_unique_many(keys)
    return f


@settings(max_examples=80, deadline=None)
@given(keys_st, keys_st, keys_st, st.sampled_from([2, 4, 8]), st.sampled_from([6, 16]))
def test_union_is_idempotent_commutative_and_equals_the_filter_of_the_union(xs, ys, zs, b, bits):
    a, o, c = (_set_built(k, bucket_size=b, fingerprint_bits=bits) for k in (xs, ys, zs))
    u = a | o
    assert u == o | a
    assert u | o == u and u | a == u and u | u == u
    assert (u | c) == (a | (o | c))
    assert u == _set_built(xs + ys, bucket_size=b, fingerprint_bits=bits)
    assert u.contains_many(xs + ys).all() if xs + ys else True
    v = a.copy()
    v |= o
    assert v == u


@settings(max_examples=60, deadline=None)
@given(keys_st, keys_st, st.sampled_from([2, 4, 8]))
def test_or_takes_the_larger_count_and_plus_adds_counts(xs, ys, b):
    # 24-bit fingerprints over keys < 400: no two keys share a fingerprint in a bucket pair here.
    def built(keys):
        f = cuckoo.Filter(4096, fingerprint_bits=24, bucket_size=b, seed=2)
        for k, n in Counter(keys).items():
            f.add_many([k] * min(n, b // 2))  # the sum of two: at most b copies, room to spare
        return f

    a, o = built(xs), built(ys)
    ca = {k: min(n, b // 2) for k, n in Counter(xs).items()}
    co = {k: min(n, b // 2) for k, n in Counter(ys).items()}
    u, s = a | o, a + o
    for k in set(ca) | set(co):
        assert u.count(k) == max(ca.get(k, 0), co.get(k, 0))
        assert s.count(k) == ca.get(k, 0) + co.get(k, 0)
    t = a.copy()
    t += o
    assert t == s
    m = a.copy()
    m.merge(o)
    assert m == s


def test_eight_shards_sharing_half_their_keys_union_to_the_filter_of_all_keys():
    rng = np.random.default_rng(8)
    shared = rng.integers(0, 2**63, size=40_000, dtype=np.uint64)
    own = [rng.integers(0, 2**63, size=40_000, dtype=np.uint64) for _ in range(8)]
    everything = np.concatenate([shared, *own])
    params = dict(capacity=len(everything), fpr=0.001, seed=11)
    shards = []
    for part in own:
        s = cuckoo.Filter(**params)
        s.add_unique_many(np.concatenate([shared, part]))
        shards.append(s)
    whole = cuckoo.Filter(**params)
    whole.add_unique_many(everything)
    union = shards[0]
    for s in shards[1:]:
        union = union | s
    assert union == whole and union.contains_many(everything).all()
    assert (union | shards[3]) == union
    tree = ((shards[0] | shards[1]) | (shards[2] | shards[3])) | ((shards[4] | shards[5]) | (shards[6] | shards[7]))
    assert tree == whole
    # + is the multiset sum: the shared keys are counted 8 times and overflow their bucket pairs.
    with pytest.raises(cuckoo.FilterFullError):
        total = shards[0]
        for s in shards[1:]:
            total = total + s


def test_union_of_grown_filters_keeps_every_key():
    a = cuckoo.Filter(500, fingerprint_bits=14, seed=3, growable=True)
    b = cuckoo.Filter(500, fingerprint_bits=14, seed=3, growable=True)
    a.add_unique_many(range(2000))
    b.add_unique_many(range(1000, 4000))
    u = a | b
    assert u.contains_many(range(4000)).all()
    assert (u | b) == u and (u | a) == u


def test_operators_with_other_types():
    f = cuckoo.Filter(10)
    for op in ("__or__", "__ior__", "__add__", "__iadd__"):
        assert getattr(f, op)(42) is NotImplemented
    with pytest.raises(TypeError):
        f + {1}


# ---- hostile keys --------------------------------------------------------------------------------


@pytest.mark.parametrize("b", [2, 4, 8])
def test_crafted_keys_with_seed_0_documented_behaviour(b):
    f = cuckoo.Filter(10**6, bucket_size=b)
    keys = colliding_keys(2 * b + 1, f.bucket_count)
    with pytest.raises(cuckoo.FilterFullError, match="fills both of its buckets") as info:
        f.add_many(keys)
    assert info.value.inserted == 2 * b and info.value.reason == "copies"
    # add_unique_many: the crafted keys are indistinguishable: one kept, the others dropped
    g = cuckoo.Filter(10**6, bucket_size=b)
    assert g.add_unique_many(colliding_keys(40, g.bucket_count)).sum() == 1


def test_crafted_keys_cannot_grow_a_filter_with_seed_0():
    f = cuckoo.Filter(100_000, growable=True)
    keys = crafted_groups(f, 64, 16)
    for k in keys.tolist():
        try:
            f.add(k)
        except cuckoo.FilterFullError as e:
            assert e.reason == "copies"
    assert len(f.stages) == 1
    with pytest.raises(cuckoo.FilterFullError):
        f.add_many(keys)
    assert len(f.stages) == 1


def test_low_load_failures_do_not_grow():
    # max_kicks=0 and b=2: an insert fails as soon as both of its buckets are full. Crafted: one
    # key of fingerprint C in bucket Q, then keys of fingerprint A in bucket P, where Q is A's
    # alternate of P: the fourth A finds P and Q full (3 A + C) without filling them itself.
    f = cuckoo.Filter(100_000, bucket_size=2, max_kicks=0, growable=True)
    m = f.bucket_count
    a_keys = colliding_keys(4, m, fingerprint_hash=0x12345678, start=77)
    p, _, fp_a = f.bucket_indices(int(a_keys[0]))
    q = f.alt_index(p, fp_a)
    c_key = colliding_keys(1, m, fingerprint_hash=0x9ABCDEF0, start=q)
    keys = np.concatenate([c_key, a_keys])
    with pytest.raises(cuckoo.FilterFullError, match="far below its design load") as info:
        f.add_many(keys)
    assert info.value.reason == "low_load" and info.value.inserted == 4 and len(f.stages) == 1
    assert f.contains_many(keys).all()  # the fourth A: a false positive of its copies, never lost


def test_secret_seed_makes_crafted_keys_random():
    f = cuckoo.Filter(20_000, fpr=0.001, seed="random")
    assert f.seed != 0 and cuckoo.Filter(10, seed=None).seed != f.seed
    g = cuckoo.Filter.from_bytes(f.to_bytes())
    assert g.seed == f.seed  # stored in the file
    probe = cuckoo.Filter(20_000, fpr=0.001)  # seed 0: the geometry the keys are crafted for
    keys = crafted_groups(probe, 1000, 40)  # 40,000 keys in 1,000 colliding groups (for seed 0)
    # Load at the first failure, as with random keys (>= 95% for b = 4).
    try:
        f.add_many(keys)
    except cuckoo.FilterFullError as e:
        assert e.reason == "full"
    assert f.load_factor >= 0.93, f.load_factor
    # Dedup: the crafted keys are all distinct; drops happen at the filter's false-positive rate.
    d = cuckoo.Filter(len(keys), fpr=0.001, seed="random")
    dropped = int(len(keys) - d.add_unique_many(keys).sum())
    assert dropped <= 3 * d.expected_fpr * len(keys) + 5, (dropped, d.expected_fpr)
    s0 = cuckoo.Filter(len(keys), fpr=0.001)
    assert int(len(keys) - s0.add_unique_many(keys).sum()) >= 39 * 1000 * 0.99  # seed 0: one kept a group


def test_seed_argument_checks():
    with pytest.raises(ValueError, match="seed"):
        cuckoo.Filter(10, seed="secret")
    with pytest.raises(TypeError, match="seed"):
        cuckoo.Filter(10, seed=1.5)


# ---- freed space, deletes, compact ---------------------------------------------------------------


def test_deletes_free_space_that_later_inserts_use():
    f = cuckoo.Filter(1000, fingerprint_bits=20, growable=True)
    f.add_many(range(3000))
    stages = len(f.stages)
    assert stages >= 2
    in_first = f.stages[0]["items"]
    assert f.discard_many(range(1000)).all()  # the first keys went to stage 0
    assert f.stages[0]["items"] == in_first - 1000 and f.stats()["deletes"] == 1000
    f.add_many(range(10**6, 10**6 + 500))
    assert len(f.stages) == stages and f.stages[0]["items"] == in_first - 500
    assert f.contains_many(range(1000, 3000)).all() and f.contains_many(range(10**6, 10**6 + 500)).all()
    # Scalar inserts choose the same stages as the batch
    g = cuckoo.Filter(1000, fingerprint_bits=20, growable=True)
    for k in range(3000):
        g.add(k)
    for k in range(1000):
        g.discard(k)
    for k in range(10**6, 10**6 + 500):
        g.add(k)
    assert g == f


def test_compact_drops_emptied_stages():
    f = cuckoo.Filter(500, fingerprint_bits=20, growable=True)
    f.add_many(range(5000))
    assert len(f.stages) >= 3
    assert f.compact() == 0
    f.discard_many(range(5000))
    assert len(f) == 0 and f.stats()["deletes"] == 5000
    inserts = f.stats()["inserts"]
    assert f.compact() == len(f.stages) - 1 or len(f.stages) == 1
    assert len(f.stages) == 1 and f.stats()["inserts"] == inserts
    f.add_many(range(100))
    assert f.contains_many(range(100)).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "unique", "del", "compact"]), st.lists(st.integers(0, 3000), max_size=80)), max_size=25))
def test_growable_bulk_equals_scalar_with_deletes(ops):
    # Deletes make older stages the target of later inserts: batches must choose as scalars do.
    bulk = cuckoo.Filter(64, fingerprint_bits=20, growable=True)
    scalar = bulk.copy()
    model: Counter = Counter()
    for op, keys in ops:
        if op == "add":
            try:
                handled = bulk.add_many(keys)
            except cuckoo.FilterFullError as e:  # more than 2b copies of a key
                assert e.reason == "copies"
                handled = e.inserted
            for k in keys[:handled]:
                scalar.add(k)
            if handled < len(keys):
                with pytest.raises(cuckoo.FilterFullError):
                    scalar.add(keys[handled])
            model.update(keys[:handled])
        elif op == "unique":
            new = bulk.add_unique_many(keys)
            assert new.tolist() == [scalar.add_unique(k) for k in keys]
            model.update(k for k, n in zip(keys, new) if n)
        elif op == "del":
            gone = bulk.discard_many(keys)
            assert gone.tolist() == [scalar.discard(k) for k in keys]
            for k, g in zip(keys, gone):
                if g:
                    model[k] -= 1
        else:
            assert bulk.compact() == scalar.compact()
        assert bulk == scalar
    for k, n in model.items():
        if n > 0:
            assert k in bulk


# ---- theory of grown filters ---------------------------------------------------------------------


def test_measure_fpr_of_a_grown_filter_matches_its_own_theory():
    f = cuckoo.Filter(10_000, fpr=0.01, growable=True)
    f.add_many(np.arange(300_000, dtype=np.uint64))
    assert len(f.stages) >= 4
    m = experiments.measure_fpr(f, 10**6)
    assert m.expected_fpr == f.expected_fpr and m.fpr_bound == f.fpr_bound
    assert 1 / 1.25 <= m.measured_fpr / m.expected_fpr <= 1.25, m
    assert m.measured_fpr <= m.fpr_bound
