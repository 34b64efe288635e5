"""Property tests (hypothesis): the filter against a multiset model, XOR duality of the bucket
indices, and bulk operations against the scalar ones applied in order.

Profiles are registered in conftest.py (no deadline; bounded example counts)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import event, example, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import cuckoo
from cuckoo import Filter, FilterFullError

# ---- strategies ----------------------------------------------------------------------------

# Text without lone surrogates (those have no UTF-8 form and are rejected).
texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8)
int_keys = st.integers(min_value=-(2**63), max_value=2**64 - 1)
# A small pool of ints makes repeated keys (multiplicity > 1) common.
keys = st.one_of(st.integers(0, 20), int_keys, st.binary(max_size=12), texts)
bucket_sizes = st.sampled_from([2, 4, 8])
widths = st.integers(4, 32)
# Semi-sorted buckets exist for b = 4 and f <= 16: drawn as a flag that only applies there, so
# every test that takes it keeps covering the plain layouts as before.
semi_sorts = st.booleans()


def semi_sort_for(semi_sort: bool, bucket_size: int, fingerprint_bits: int) -> bool:
    return semi_sort and bucket_size == 4 and fingerprint_bits <= 16


# ---- stateful test against a multiset model ----------------------------------------------------


class FilterAgainstMultiset(RuleBasedStateMachine):
    """A small filter (it fills up: FilterFullError happens) driven by scalar and bulk operations,
    checked against a collections.Counter of the keys added and not removed.

    The model stays exact because only keys in the model are ever removed: removing an absent key
    that happens to be a false positive would delete another key's fingerprint (documented
    behaviour of cuckoo filters), which is tested separately in test_remove_of_absent_keys.

    Distinct Python keys that are the same filter key (1 and True and b"\\x01\\0\\0\\0\\0\\0\\0\\0",
    "a" and b"a", -1 and 2**64 - 1) are separate model entries; every invariant below is one that
    such aliasing cannot break (count >= model, len == total)."""

    def __init__(self):
        super().__init__()
        self.f: Filter | None = None
        self.model: Counter = Counter()

    @initialize(
        capacity=st.integers(1, 120),
        bucket_size=bucket_sizes,
        fingerprint_bits=widths,
        max_kicks=st.sampled_from([0, 1, 8, 500]),
        seed=st.integers(0, 2**64 - 1),
        semi_sort=semi_sorts,
    )
    def create(self, capacity, bucket_size, fingerprint_bits, max_kicks, seed, semi_sort):
        self.f = Filter(capacity, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size,
                        max_kicks=max_kicks, seed=seed,
                        semi_sort=semi_sort_for(semi_sort, bucket_size, fingerprint_bits))

    # -- helpers --

    def _model_add(self, ks):
        for k in ks:
            self.model[k] += 1

    def _model_remove(self, k):
        self.model[k] -= 1
        if self.model[k] == 0:
            del self.model[k]

    def _present_batch(self, data, max_size=10):
        """A sub-multiset of the model, in random order."""
        drawn = data.draw(st.lists(st.sampled_from(list(self.model)), max_size=max_size))
        used: Counter = Counter()
        batch = []
        for k in drawn:
            if used[k] < self.model[k]:
                used[k] += 1
                batch.append(k)
        return batch

    @staticmethod
    def _container(data, ks):
        kind = data.draw(st.sampled_from(["list", "tuple", "iter", "object_array"]))
        if kind == "tuple":
            return tuple(ks)
        if kind == "iter":
            return iter(ks)
        if kind == "object_array":
            arr = np.empty(len(ks), dtype=object)
            arr[:] = ks
            return arr
        return list(ks)

    # -- rules --

    @rule(key=keys)
    def add(self, key):
        before = self.f.copy()
        try:
            self.f.add(key)
        except FilterFullError as e:
            event("add: FilterFullError")
            assert e.inserted == 0
            assert self.f == before
        else:
            self._model_add([key])

    @rule(key=keys)
    def add_unique(self, key):
        before = self.f.copy()
        present = key in self.f
        try:
            added = self.f.add_unique(key)
        except FilterFullError:
            event("add_unique: FilterFullError")
            assert not present
            assert self.f == before
            return
        assert added is (not present)
        if self.model[key] > 0:
            assert added is False
        if added:
            self._model_add([key])
        else:
            assert self.f == before

    @rule(data=st.data())
    def discard_present(self, data):
        if not self.model:
            return
        key = data.draw(st.sampled_from(list(self.model)))
        assert self.f.discard(key) is True
        self._model_remove(key)

    @rule(data=st.data())
    def remove_present(self, data):
        if not self.model:
            return
        key = data.draw(st.sampled_from(list(self.model)))
        self.f.remove(key)
        self._model_remove(key)

    @rule(data=st.data(), batch=st.lists(keys, max_size=40))
    def add_many(self, data, batch):
        before = self.f.copy()
        try:
            n = self.f.add_many(self._container(data, batch))
        except FilterFullError as e:
            event("add_many: FilterFullError")
            n = e.inserted
            assert 0 <= n < len(batch)
            # the batch is the scalar adds applied in order, up to the failing key
            replay = before.copy()
            for k in batch[:n]:
                replay.add(k)
            assert self.f == replay
            with pytest.raises(FilterFullError):
                replay.add(batch[n])
            assert replay == self.f
        else:
            assert n == len(batch)
        self._model_add(batch[:n])
        assert len(self.f) == len(before) + n

    @rule(data=st.data(), batch=st.lists(keys, max_size=40))
    def add_unique_many(self, data, batch):
        before = self.f.copy()
        replay = before.copy()
        try:
            mask = self.f.add_unique_many(self._container(data, batch))
        except FilterFullError as e:
            event("add_unique_many: FilterFullError")
            n = e.inserted
            assert 0 <= n < len(batch)
            added = [replay.add_unique(k) for k in batch[:n]]
            assert self.f == replay
        else:
            assert mask.dtype == np.bool_ and mask.shape == (len(batch),)
            added = [replay.add_unique(k) for k in batch]
            assert mask.tolist() == added
            assert self.f == replay
        for k, was_new in zip(batch, added):
            if was_new:
                self._model_add([k])

    @rule(data=st.data())
    def discard_many_present(self, data):
        if not self.model:
            return
        batch = self._present_batch(data)
        out = self.f.discard_many(self._container(data, batch))
        assert out.tolist() == [True] * len(batch)
        for k in batch:
            self._model_remove(k)

    @rule(roll=st.integers(0, 9))
    def clear(self, roll):
        if roll != 0:
            return  # keep clears rare, so that the filter fills up
        self.f.clear()
        self.model.clear()

    # -- invariants --

    @invariant()
    def no_false_negatives(self):
        for k in self.model:
            assert k in self.f, k
        ks = list(self.model)
        assert self.f.contains_many(ks).all()

    @invariant()
    def len_is_exact(self):
        assert len(self.f) == sum(self.model.values())
        assert self.f.load_factor == pytest.approx(len(self.f) / self.f.slot_count)

    @invariant()
    def count_is_at_least_the_multiplicity(self):
        ks = list(self.model)
        counts = self.f.count_many(ks).tolist()
        for k, c in zip(ks, counts):
            assert c == self.f.count(k)
            assert c >= self.model[k], (k, c, self.model[k])


FilterAgainstMultiset.TestCase.settings = settings(
    settings.default, stateful_step_count=50,
)
TestFilterAgainstMultiset = FilterAgainstMultiset.TestCase


def _machine_at_level(level: str) -> type:
    """The model test at one kernel level (a unittest class: the every_cpu_level mark does not
    reach it). Each run sets the level and restores it at teardown."""

    class AtLevel(FilterAgainstMultiset):
        def __init__(self):
            self.level_before = cuckoo.cpu_level()
            cuckoo._core._set_cpu_level(level)
            super().__init__()

        def teardown(self):
            cuckoo._core._set_cpu_level(self.level_before)

    AtLevel.TestCase.settings = FilterAgainstMultiset.TestCase.settings
    return AtLevel.TestCase


# The default level runs in TestFilterAgainstMultiset; the others here.
for _level in cuckoo.cpu_levels():
    if _level != cuckoo.cpu_level():
        globals()[f"TestFilterAgainstMultiset_{_level}"] = _machine_at_level(_level)


def test_full_errors_happen_in_the_model_test_setting():
    """The stateful test only proves 'no false negatives after FilterFullError' if a filter of its
    size really fills up within its step budget: check one such run deterministically."""
    f = Filter(10, fingerprint_bits=8, bucket_size=2, max_kicks=1, seed=0)
    model: Counter = Counter()
    failures = 0
    for k in range(40):
        try:
            f.add(k)
            model[k] += 1
        except FilterFullError:
            failures += 1
        assert all(key in f for key in model)
        assert len(f) == sum(model.values())
    assert failures > 0


def test_remove_of_absent_keys():
    """Removing a key that was never added: KeyError (discard returns False) unless it is a false
    positive, in which case one fingerprint that matches it is removed."""
    # 32-bit fingerprints: no false positive among these fixed keys
    f = Filter(1000, fingerprint_bits=32, seed=1)
    f.add_many(range(500))
    before = f.copy()
    for k in range(10_000, 10_200):
        with pytest.raises(KeyError):
            f.remove(k)
        assert f.discard(k) is False
    assert f == before
    # 4-bit fingerprints: false positives are common; removing one deletes a matching fingerprint
    g = Filter(1000, fingerprint_bits=4, seed=1)
    g.add_many(range(500))
    removed = 0
    for k in range(10_000, 10_200):
        was_in = k in g
        n = len(g)
        if g.discard(k):
            removed += 1
            assert was_in and len(g) == n - 1
        else:
            assert not was_in and len(g) == n
    assert removed > 0


# ---- XOR duality ---------------------------------------------------------------------------

# capacities giving bucket counts of 1, 2, 3, 5 (odd) blocks of 8 and large non-power-of-two tables
EDGE_CAPACITIES = [1, 30, 60, 90, 150, 1000, 12_345, 100_003, 2**20, 2**20 + 1]


@given(
    capacity=st.one_of(st.sampled_from(EDGE_CAPACITIES), st.integers(1, 2_000_000)),
    bucket_size=bucket_sizes,
    fingerprint_bits=widths,
    data=st.data(),
)
@example(capacity=1, bucket_size=2, fingerprint_bits=4, data=None)
@example(capacity=1, bucket_size=8, fingerprint_bits=32, data=None)
@example(capacity=30, bucket_size=4, fingerprint_bits=4, data=None)
def test_alt_index_is_an_involution_without_fixed_points(capacity, bucket_size, fingerprint_bits, data):
    f = Filter(capacity, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size)
    m = f.bucket_count
    top = 2**fingerprint_bits - 1
    if data is None:  # explicit examples: the corners
        pairs = [(i, fp) for i in {0, 1, 7, 8, m - 1} if i < m for fp in {1, 2, top}]
    else:
        pairs = data.draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(1, top)), min_size=1, max_size=40))
    for i, fp in pairs:
        j = f.alt_index(i, fp)
        assert 0 <= j < m
        assert j != i
        assert f.alt_index(j, fp) == i


@pytest.mark.parametrize("capacity", [1, 30, 45, 60, 90, 150, 300])
@pytest.mark.parametrize("fingerprint_bits", [4, 8])
def test_alt_index_exhaustive_on_small_tables(capacity, fingerprint_bits):
    f = Filter(capacity, fingerprint_bits=fingerprint_bits, bucket_size=2)
    m = f.bucket_count
    for fp in range(1, 2**fingerprint_bits):
        alts = [f.alt_index(i, fp) for i in range(m)]
        assert sorted(alts) == list(range(m))  # a permutation ...
        for i, j in enumerate(alts):
            assert j != i and alts[j] == i  # ... that is a fixed-point-free involution


@given(
    capacity=st.one_of(st.sampled_from(EDGE_CAPACITIES), st.integers(1, 200_000)),
    bucket_size=bucket_sizes,
    fingerprint_bits=widths,
    seed=st.integers(0, 2**64 - 1),
    ks=st.lists(keys, min_size=1, max_size=30),
)
def test_bucket_indices_are_consistent(capacity, bucket_size, fingerprint_bits, seed, ks):
    f = Filter(capacity, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, seed=seed)
    m = f.bucket_count
    for k in ks:
        i1, i2, fp = f.bucket_indices(k)
        assert 1 <= fp < 2**fingerprint_bits
        assert 0 <= i1 < m and 0 <= i2 < m and i1 != i2
        assert i2 == f.alt_index(i1, fp)
        assert i1 == f.alt_index(i2, fp)


@given(ks=st.lists(keys, min_size=1, max_size=30), seed=st.integers(0, 2**64 - 1), bucket_size=bucket_sizes,
       fingerprint_bits=widths, semi_sort=semi_sorts)
def test_added_keys_are_in_one_of_their_two_buckets(ks, seed, bucket_size, fingerprint_bits, semi_sort):
    """count(k) counts k's fingerprint in its two buckets: adding k raises it by exactly one (or,
    when k's two buckets cannot take another copy, e.g. after 2 b adds of the same key, the add
    raises FilterFullError and changes nothing)."""
    f = Filter(200, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, seed=seed,
               semi_sort=semi_sort_for(semi_sort, bucket_size, fingerprint_bits))
    for k in ks:
        c = f.count(k)
        before = f.copy()
        try:
            f.add(k)
        except FilterFullError:
            assert c >= bucket_size  # never at this low load unless k's copies crowd its buckets
            assert f == before and f.count(k) == c
        else:
            assert f.count(k) == c + 1


# ---- bulk == scalar ------------------------------------------------------------------------

INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8"]


@st.composite
def int_arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    info = np.iinfo(dtype)
    values = draw(st.lists(st.integers(int(info.min), int(info.max)), max_size=60))
    arr = np.array(values, dtype=dtype)
    if draw(st.booleans()) and len(arr) > 1:
        arr = arr[:: draw(st.integers(1, 3))]  # a strided view
    return arr, [int(v) for v in arr.tolist()]


@st.composite
def bytes_arrays(draw):
    values = draw(st.lists(st.binary(max_size=10), max_size=40))
    width = draw(st.integers(max(1, max((len(v) for v in values), default=1)), 12))
    arr = np.array(values, dtype=f"S{width}")
    # NumPy S scalars drop trailing NULs, and so does the filter
    return arr, [bytes(v) for v in arr.tolist()]


@st.composite
def str_arrays(draw):
    values = draw(st.lists(texts, max_size=40))
    width = draw(st.integers(max(1, max((len(v) for v in values), default=1)), 10))
    dtype = draw(st.sampled_from([f"<U{width}", f">U{width}"]))
    arr = np.array(values, dtype=dtype)
    return arr, [str(v) for v in arr.tolist()]


@st.composite
def object_batches(draw):
    values = draw(st.lists(keys, max_size=40))
    kind = draw(st.sampled_from(["list", "tuple", "object_array"]))
    if kind == "object_array":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr, values
    return (tuple(values) if kind == "tuple" else list(values)), values


batches = st.one_of(int_arrays(), bytes_arrays(), str_arrays(), object_batches())


def _small_loaded_filter(preload, bucket_size, fingerprint_bits, seed, hash_algorithm, semi_sort=False) -> Filter:
    f = Filter(64, fingerprint_bits=fingerprint_bits, bucket_size=bucket_size, seed=seed, max_kicks=20,
               hash_algorithm=hash_algorithm, semi_sort=semi_sort_for(semi_sort, bucket_size, fingerprint_bits))
    for k in preload:
        try:
            f.add(k)
        except FilterFullError:
            break
    return f


# short fingerprints make false positives (and so non-trivial answers) common
bulk_widths = st.sampled_from([4, 5, 6, 8, 12, 15, 16, 32])  # with b = 2, 4, 8: every bucket shape
hash_algorithms = st.sampled_from(["xxh3", "xxh64"])  # their bulk hash paths differ


@pytest.mark.every_cpu_level
@given(batch=batches, preload=st.lists(keys, max_size=60), bucket_size=bucket_sizes, fingerprint_bits=bulk_widths,
       seed=st.integers(0, 2**64 - 1), hash_algorithm=hash_algorithms, semi_sort=semi_sorts)
def test_read_bulk_equals_scalar(batch, preload, bucket_size, fingerprint_bits, seed, hash_algorithm, semi_sort):
    arr, scalars = batch
    f = _small_loaded_filter(preload + scalars[::2], bucket_size, fingerprint_bits, seed, hash_algorithm, semi_sort)
    note(f"{f!r}")
    contains = f.contains_many(arr)
    assert contains.dtype == np.bool_
    assert contains.tolist() == [k in f for k in scalars]
    counts = f.count_many(arr)
    assert counts.dtype == np.uint8
    assert counts.tolist() == [f.count(k) for k in scalars]


@pytest.mark.every_cpu_level
@given(batch=batches, preload=st.lists(keys, max_size=60), bucket_size=bucket_sizes, fingerprint_bits=bulk_widths,
       seed=st.integers(0, 2**64 - 1), hash_algorithm=hash_algorithms, semi_sort=semi_sorts)
def test_write_bulk_equals_scalar_in_order(batch, preload, bucket_size, fingerprint_bits, seed, hash_algorithm,
                                           semi_sort):
    arr, scalars = batch
    base = _small_loaded_filter(preload, bucket_size, fingerprint_bits, seed, hash_algorithm, semi_sort)

    # add_unique_many == add_unique one by one (stopping where the scalar path is full)
    bulk, scalar = base.copy(), base.copy()
    expected, full_at = [], None
    for i, k in enumerate(scalars):
        try:
            expected.append(scalar.add_unique(k))
        except FilterFullError:
            full_at = i
            break
    if full_at is None:
        assert bulk.add_unique_many(arr).tolist() == expected
    else:
        with pytest.raises(FilterFullError) as info:
            bulk.add_unique_many(arr)
        assert info.value.inserted == full_at
    assert bulk == scalar

    # add_many == add one by one
    bulk, scalar = base.copy(), base.copy()
    full_at = None
    for i, k in enumerate(scalars):
        try:
            scalar.add(k)
        except FilterFullError:
            full_at = i
            break
    if full_at is None:
        assert bulk.add_many(arr) == len(scalars)
    else:
        with pytest.raises(FilterFullError) as info:
            bulk.add_many(arr)
        assert info.value.inserted == full_at
    assert bulk == scalar
    assert len(bulk) == len(scalar)

    # discard_many == discard one by one (absent keys included: same false-positive removals)
    bulk, scalar = base.copy(), base.copy()
    assert bulk.discard_many(arr).tolist() == [scalar.discard(k) for k in scalars]
    assert bulk == scalar


@pytest.mark.every_cpu_level
@given(batch=st.one_of(int_arrays(), bytes_arrays(), str_arrays()), seed=st.integers(0, 2**64 - 1),
       hash_algorithm=hash_algorithms, semi_sort=semi_sorts)
def test_arrays_equal_lists_of_python_keys(batch, seed, hash_algorithm, semi_sort):
    """The buffer path (hashing inside the C++ loop) and the Python-object path agree (integer
    arrays are hashed by vector code, and the kernels then read, and decode semi-sorted, buckets
    with loads instead of gathers)."""
    arr, scalars = batch
    f = Filter(64, fingerprint_bits=6, seed=seed, hash_algorithm=hash_algorithm, semi_sort=semi_sort)
    g = f.copy()
    try:
        f.add_many(arr)
    except FilterFullError as e:
        with pytest.raises(FilterFullError) as info:
            g.add_many(scalars)
        assert info.value.inserted == e.inserted
    else:
        g.add_many(scalars)
    assert f == g
    assert f.contains_many(arr).tolist() == g.contains_many(scalars).tolist()
    assert f.count_many(arr).tolist() == g.count_many(scalars).tolist()
