"""The Python surface of cuckoo.Filter: construction, set-like semantics, properties, bad input,
key semantics. Exact answers are asserted with 32-bit fingerprints and a few fixed keys (a false
positive is then a ~2e-9 event per lookup, and the keys are fixed, so the tests are
deterministic)."""

from __future__ import annotations

import collections.abc
import copy
import math

import numpy as np
import pytest

import cuckoo
from cuckoo import CuckooError, Filter, FilterFullError, FormatError, ReadOnlyError

DESIGN_LOAD = {2: 0.80, 4: 0.935, 8: 0.965}


def expected_fpr_formula(f: int, b: int, load: float) -> float:
    return -math.expm1(2 * b * load * math.log1p(-1.0 / (2**f - 1)))


# ---- package -------------------------------------------------------------------------------


def test_package_exports():
    for name in ("Filter", "CuckooError", "FilterFullError", "FormatError", "ReadOnlyError"):
        assert name in cuckoo.__all__
        assert hasattr(cuckoo, name)
    assert isinstance(cuckoo.__version__, str) and cuckoo.__version__


def test_exception_hierarchy():
    assert issubclass(CuckooError, Exception)
    assert issubclass(FilterFullError, CuckooError)
    assert issubclass(FormatError, CuckooError) and issubclass(FormatError, ValueError)
    assert issubclass(ReadOnlyError, CuckooError) and issubclass(ReadOnlyError, TypeError)
    assert not issubclass(FilterFullError, (ValueError, TypeError))


# ---- construction ------------------------------------------------------------------------------


def test_defaults():
    f = Filter(1000)
    assert f.capacity == 1000
    assert f.bucket_size == 4
    assert f.max_kicks == 500
    assert f.seed == 0
    # default fpr 0.001: f = ceil(log2(2 * 4 / 0.001)) = ceil(12.97) = 13
    assert f.fingerprint_bits == 13
    assert len(f) == 0
    assert f.load_factor == 0.0
    assert f.expected_fpr == 0.0
    assert f.read_only is False
    assert f.stats() == {"inserts": 0, "failed_inserts": 0, "kicked_inserts": 0, "moves": 0, "buckets_searched": 0,
                         "deletes": 0}


def test_arguments_after_fpr_are_keyword_only():
    with pytest.raises(TypeError):
        Filter(1000, 0.01, 8)  # type: ignore[misc]
    f = Filter(capacity=1000, fpr=0.01, bucket_size=2, max_kicks=7, seed=3)
    assert (f.capacity, f.bucket_size, f.max_kicks, f.seed) == (1000, 2, 7, 3)


@pytest.mark.parametrize("bucket_size", [2, 4, 8])
@pytest.mark.parametrize("fpr", [0.9, 0.5, 0.25, 0.1, 0.03, 0.01, 0.001, 1e-4, 3e-6, 1e-7, 2e-9])
def test_fpr_picks_the_smallest_sufficient_fingerprint(fpr, bucket_size):
    # f is the smallest width >= 4 with 2 b / 2**f <= fpr
    want = 4
    while 2 * bucket_size / 2**want > fpr:
        want += 1
    if want > 32:
        with pytest.raises(ValueError, match="fpr"):
            Filter(1000, fpr, bucket_size=bucket_size)
        return
    f = Filter(1000, fpr, bucket_size=bucket_size)
    assert f.fingerprint_bits == want
    # the documented bound at full load honours the requested rate
    assert f.fpr_bound <= fpr


@pytest.mark.parametrize("bits", [4, 5, 7, 8, 12, 16, 17, 24, 31, 32])
def test_fingerprint_bits_is_taken_as_given(bits):
    f = Filter(500, fingerprint_bits=bits)
    assert f.fingerprint_bits == bits
    assert f.fpr_bound == pytest.approx(expected_fpr_formula(bits, 4, 1.0), rel=1e-12)


@pytest.mark.parametrize("bucket_size", [2, 4, 8])
@pytest.mark.parametrize("capacity", [1, 7, 100, 1000, 10_000, 12_345, 100_003, 1_000_000])
def test_sizing(capacity, bucket_size):
    f = Filter(capacity, fingerprint_bits=12, bucket_size=bucket_size)
    buckets = math.ceil(capacity / (bucket_size * DESIGN_LOAD[bucket_size]))
    buckets = max(8, (buckets + 7) // 8 * 8)
    assert f.bucket_count == buckets
    assert f.bucket_count % 8 == 0
    assert f.slot_count == f.bucket_count * bucket_size
    assert f.slot_count >= capacity
    # packed tightly: exactly f bits a slot
    assert f.nbytes == f.slot_count * 12 // 8
    assert f.bits_per_item == pytest.approx(8 * f.nbytes / capacity)
    assert f.capacity == capacity


PROPERTIES = ["capacity", "bucket_count", "bucket_size", "slot_count", "fingerprint_bits", "seed", "max_kicks",
              "load_factor", "nbytes", "bits_per_item", "expected_fpr", "fpr_bound", "read_only"]


@pytest.mark.parametrize("name", PROPERTIES)
def test_properties_are_read_only(name):
    f = Filter(100)
    value = getattr(f, name)
    with pytest.raises(AttributeError):
        setattr(f, name, value)
    assert getattr(f, name) == value


def test_capacity_accepts_integer_like_objects():
    assert Filter(np.int64(100)).capacity == 100
    assert Filter(np.uint16(100)).capacity == 100


BAD_PARAMS = [
    ({"capacity": 0}, ValueError, r"capacity must be positive"),
    ({"capacity": -1}, ValueError, r"capacity"),
    ({"capacity": 2**63}, ValueError, r"capacity"),
    ({"capacity": 2**40}, ValueError, r"capacity is too large"),
    ({"capacity": 10.0}, TypeError, r"capacity must be an int, not float"),
    ({"capacity": "10"}, TypeError, r"capacity must be an int, not str"),
    ({"capacity": None}, TypeError, r"capacity must be an int"),
    ({"capacity": True}, TypeError, r"capacity must be an int, not bool"),
    ({"capacity": 10, "fpr": 0}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": 0.0}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": 1}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": 1.5}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": -0.01}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": float("nan")}, ValueError, r"fpr must be in \(0, 1\)"),
    ({"capacity": 10, "fpr": 1e-12}, ValueError, r"fpr is too small"),
    ({"capacity": 10, "fpr": "0.1"}, TypeError, r"fpr must be a float, not str"),
    ({"capacity": 10, "fpr": 0.01, "fingerprint_bits": 8}, ValueError, r"fpr or fingerprint_bits, not both"),
    ({"capacity": 10, "fingerprint_bits": 3}, ValueError, r"fingerprint_bits must be between 4 and 32"),
    ({"capacity": 10, "fingerprint_bits": 33}, ValueError, r"fingerprint_bits must be between 4 and 32"),
    ({"capacity": 10, "fingerprint_bits": 0}, ValueError, r"fingerprint_bits must be between 4 and 32"),
    ({"capacity": 10, "fingerprint_bits": 8.0}, TypeError, r"fingerprint_bits must be an int"),
    ({"capacity": 10, "bucket_size": 3}, ValueError, r"bucket_size must be 2, 4 or 8"),
    ({"capacity": 10, "bucket_size": 1}, ValueError, r"bucket_size must be 2, 4 or 8"),
    ({"capacity": 10, "bucket_size": 16}, ValueError, r"bucket_size must be 2, 4 or 8"),
    ({"capacity": 10, "bucket_size": -4}, ValueError, r"bucket_size"),
    ({"capacity": 10, "bucket_size": 4.0}, TypeError, r"bucket_size must be an int"),
    ({"capacity": 10, "max_kicks": -1}, ValueError, r"max_kicks must be between 0 and"),
    ({"capacity": 10, "max_kicks": 10**9}, ValueError, r"max_kicks must be between 0 and"),
    ({"capacity": 10, "max_kicks": 1.5}, TypeError, r"max_kicks must be an int"),
    ({"capacity": 10, "seed": -1}, ValueError, r"seed must be between 0 and 2\*\*64 - 1"),
    ({"capacity": 10, "seed": 2**64}, ValueError, r"seed must be between 0 and 2\*\*64 - 1"),
    ({"capacity": 10, "seed": 1.0}, TypeError, r"seed must be an int, None or 'random', not float"),
    ({"capacity": 10, "seed": "secret"}, ValueError, r"seed must be an int, None or 'random', got 'secret'"),
    ({"capacity": 10, "hash_algorithm": "md5"}, ValueError, r"hash_algorithm must be 'xxh3' or 'xxh64', got 'md5'"),
    ({"capacity": 10, "hash_algorithm": 2}, TypeError, r"hash_algorithm must be a str, not int"),
]


@pytest.mark.parametrize("kwargs, exc, message", BAD_PARAMS, ids=[repr(p[0]) for p in BAD_PARAMS])
def test_bad_parameters_raise_a_clear_error(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        Filter(**kwargs)


def test_parameter_extremes_are_accepted():
    assert Filter(10, max_kicks=0).max_kicks == 0
    assert Filter(10, seed=2**64 - 1).seed == 2**64 - 1
    assert Filter(10, fingerprint_bits=4).fingerprint_bits == 4
    assert Filter(10, fingerprint_bits=32).fingerprint_bits == 32


# ---- set-like semantics --------------------------------------------------------------------


def test_add_is_a_multiset_insert(wide_filter):
    f = wide_filter
    f.add("k")
    f.add("k")
    assert "k" in f
    assert f.count("k") == 2
    assert len(f) == 2
    assert f.discard("k") is True
    assert f.count("k") == 1 and len(f) == 1 and "k" in f
    f.remove("k")
    assert f.count("k") == 0 and len(f) == 0 and "k" not in f
    assert f.discard("k") is False
    assert len(f) == 0


def test_add_returns_none(wide_filter):
    assert wide_filter.add(1) is None


@pytest.mark.parametrize("bucket_size", [2, 4, 8])
def test_one_key_can_be_stored_at_most_2b_times(bucket_size):
    # all copies of a key share its fingerprint and its two buckets
    f = Filter(1000, fingerprint_bits=32, bucket_size=bucket_size)
    for _ in range(2 * bucket_size):
        f.add("dup")
    assert f.count("dup") == 2 * bucket_size
    before = f.copy()
    with pytest.raises(FilterFullError):
        f.add("dup")
    assert f == before and f.count("dup") == 2 * bucket_size
    assert f.add_unique("dup") is False  # present: no room needed
    f.add("other")  # the rest of the table is still usable
    assert "other" in f


def test_add_unique(wide_filter):
    f = wide_filter
    assert f.add_unique(b"a") is True
    assert f.add_unique(b"a") is False
    assert f.count(b"a") == 1 and len(f) == 1
    f.add(b"a")
    assert f.add_unique(b"a") is False
    assert f.count(b"a") == 2


@pytest.mark.parametrize("key", [2, -5, 2**64 - 1, b"bytes key", "str key", "é", ""])
def test_remove_absent_raises_key_error_naming_the_key(wide_filter, key):
    wide_filter.add("something else")
    before = wide_filter.copy()
    with pytest.raises(KeyError) as info:
        wide_filter.remove(key)
    assert info.value.args == (key,)  # like set.remove: the key itself
    assert repr(key) in str(info.value)
    assert wide_filter == before


def test_count_and_contains_of_absent_keys(wide_filter):
    wide_filter.add_many(range(100))
    for k in range(100, 200):
        assert k not in wide_filter
        assert wide_filter.count(k) == 0


def test_len_is_exact(wide_filter):
    f = wide_filter
    assert f.add_many(range(500)) == 500
    assert len(f) == 500
    f.add_many(range(100))  # duplicates are stored again
    assert len(f) == 600
    assert f.discard_many(range(50)).all()
    assert len(f) == 550
    assert f.load_factor == pytest.approx(550 / f.slot_count)


def test_clear(wide_filter):
    f = wide_filter
    f.add_many(range(300))
    f.clear()
    assert len(f) == 0
    assert f.load_factor == 0.0
    assert not f.contains_many(range(300)).any()
    assert f == Filter(1000, fingerprint_bits=32)
    f.add(1)  # usable after clear
    assert 1 in f


def test_copy_is_independent(wide_filter):
    f = wide_filter
    f.add_many(["a", "b"])
    for g in (f.copy(), copy.copy(f), copy.deepcopy(f)):
        assert type(g) is type(f)
        assert g is not f
        assert g == f
        g.add("only in g")
        assert "only in g" not in f and len(f) == 2
        f.add("only in f")
        assert "only in f" not in g and len(g) == 3
        f.remove("only in f")
        assert (f.capacity, f.bucket_count, f.fingerprint_bits, f.bucket_size, f.seed, f.max_kicks) == (
            g.capacity, g.bucket_count, g.fingerprint_bits, g.bucket_size, g.seed, g.max_kicks)


def test_equality():
    a = Filter(1000, fingerprint_bits=32)
    b = Filter(1000, fingerprint_bits=32)
    assert a == b and not (a != b)
    a.add_many(range(50))
    assert a != b and not (a == b)
    b.add_many(range(50))
    assert a == b
    a.add(1000)
    assert a != b
    a.remove(1000)
    assert a == b
    assert a == a


@pytest.mark.parametrize("other_kwargs", [
    {"seed": 1},
    {"fingerprint_bits": 31},
    {"bucket_size": 8},
    {"capacity": 5000},
])
def test_filters_with_different_parameters_are_not_equal(other_kwargs):
    kwargs = {"capacity": 1000, "fingerprint_bits": 32, "bucket_size": 4, "seed": 0}
    a = Filter(**kwargs)
    b = Filter(**{**kwargs, **other_kwargs})
    assert a != b and not (a == b)  # even empty
    a.add_many(range(10))
    b.add_many(range(10))
    assert a != b


def test_max_kicks_and_capacity_do_not_change_the_content():
    # Equality compares the table (and the parameters that decide where keys go), not the
    # eviction budget or the capacity label of two filters with the same table.
    a = Filter(1000, fingerprint_bits=16, max_kicks=500)
    b = Filter(999, fingerprint_bits=16, max_kicks=20)
    assert a.bucket_count == b.bucket_count
    a.add_many(range(200))
    b.add_many(range(200))
    assert a == b


def test_comparison_with_other_types():
    f = Filter(100)
    assert (f == 1) is False
    assert (f != 1) is True
    assert f != set()
    assert f != None  # noqa: E711


def test_filter_is_unhashable():
    f = Filter(100)
    with pytest.raises(TypeError):
        hash(f)
    assert not isinstance(f, collections.abc.Hashable)
    with pytest.raises(TypeError):
        {f}


def test_repr_states_the_key_facts():
    f = Filter(12_345, fingerprint_bits=12, bucket_size=8)
    f.add_many(range(1_234))
    r = repr(f)
    assert r.startswith("<cuckoo.Filter") and r.endswith(">")
    assert "1,234" in r and "12,345" in r
    assert "f=12" in r and "b=8" in r
    assert f"{f.load_factor:.1%}" in r
    assert "FPR" in r


def test_repr_html_states_the_key_facts():
    f = Filter(12_345, fingerprint_bits=12, bucket_size=8, seed=77)
    f.add_many(range(1_234))
    h = f._repr_html_()
    assert h.startswith("<table") and h.endswith("</table>")
    assert "cuckoo.Filter" in h
    for fact in ("1,234", "12,345", "12 bits", f"{f.bucket_count:,} \u00d7 8", f"{f.slot_count:,}", "77",
                 f"{f.load_factor:.1%}"):
        assert fact in h, fact


def test_statistics_properties():
    f = Filter(10_000, fingerprint_bits=10, bucket_size=4)
    f.add_many(range(5_000))
    assert f.load_factor == pytest.approx(5_000 / f.slot_count)
    assert f.expected_fpr == pytest.approx(expected_fpr_formula(10, 4, f.load_factor), rel=1e-12)
    assert 0 < f.expected_fpr < f.fpr_bound
    # about 2 b / 2**f
    assert f.fpr_bound == pytest.approx(8 / 2**10, rel=0.01)
    stats = f.stats()
    assert stats["inserts"] == 5_000
    assert stats["failed_inserts"] == 0
    assert stats["kicked_inserts"] <= stats["inserts"]
    assert stats["moves"] >= stats["kicked_inserts"]


# ---- FilterFullError ---------------------------------------------------------------------------


def _full_filter() -> Filter:
    """A tiny filter filled until an insert failed."""
    f = Filter(8, fingerprint_bits=16, bucket_size=2, max_kicks=4)
    with pytest.raises(FilterFullError):
        f.add_many(range(1000))
    return f


def test_filter_full_error_on_add():
    f = _full_filter()
    stored = len(f)
    before = f.copy()
    failures = 0
    for k in range(1000, 1100):
        try:
            f.add(k)
        except FilterFullError as e:
            failures += 1
            assert isinstance(e, CuckooError)
            assert e.inserted == 0
            assert "full" in str(e) and "max_kicks=4" in str(e)
            assert f == before
        else:
            before = f.copy()
    assert failures > 0
    assert len(f) == stored + 100 - failures
    assert f.contains_many(range(stored)).all()
    assert f.stats()["failed_inserts"] >= failures


def test_filter_full_error_in_a_batch_reports_inserted():
    f = Filter(8, fingerprint_bits=16, bucket_size=2, max_kicks=4)
    keys = list(range(1000))
    with pytest.raises(FilterFullError) as info:
        f.add_many(keys)
    n = info.value.inserted
    assert 0 < n < len(keys)
    assert len(f) == n
    assert f"{n:,} of 1,000" in str(info.value)
    assert f.contains_many(keys[:n]).all()


def test_add_unique_on_full_filter():
    f = _full_filter()
    before = f.copy()
    # a key already present needs no room
    assert f.add_unique(0) is False
    assert f == before


def test_max_kicks_zero_still_uses_empty_slots():
    f = Filter(100, fingerprint_bits=16, max_kicks=0)
    f.add_many(range(50))
    assert len(f) == 50
    assert f.stats()["kicked_inserts"] == 0


# ---- bulk methods ------------------------------------------------------------------------------


def test_bulk_result_types(wide_filter):
    f = wide_filter
    assert f.add_many([1, 2, 3]) == 3
    c = f.contains_many([1, 4])
    assert isinstance(c, np.ndarray) and c.dtype == np.bool_ and c.tolist() == [True, False]
    n = f.count_many([1, 4])
    assert n.dtype == np.uint8 and n.tolist() == [1, 0]
    u = f.add_unique_many([1, 5, 5])
    assert u.dtype == np.bool_ and u.tolist() == [False, True, False]
    d = f.discard_many([5, 5])
    assert d.dtype == np.bool_ and d.tolist() == [True, False]


def test_bulk_methods_accept_empty_input(wide_filter):
    f = wide_filter
    assert f.add_many([]) == 0
    for method in (f.contains_many, f.count_many, f.add_unique_many, f.discard_many):
        out = method([])
        assert isinstance(out, np.ndarray) and out.shape == (0,)
        out = method(np.array([], dtype=np.int64))
        assert out.shape == (0,)
    assert len(f) == 0


@pytest.mark.parametrize("make", [iter, lambda xs: (x for x in xs), tuple, list, lambda xs: np.array(xs, dtype=object)])
def test_bulk_methods_accept_iterables(wide_filter, make):
    f = wide_filter
    assert f.add_many(make([1, "a", b"b"])) == 3
    assert f.add_unique_many(make([1, 2, 2])).tolist() == [False, True, False]
    assert len(f) == 4
    assert f.contains_many(make([1, 2, "a", b"b", 3])).tolist() == [True] * 4 + [False]
    assert f.count_many(make([1, 3])).tolist() == [1, 0]
    assert f.discard_many(make([2, 2])).tolist() == [True, False]
    assert len(f) == 3


def test_update(wide_filter):
    f = wide_filter
    f.update([1, 2], (3,), iter(["x"]), np.array([4, 5], dtype=np.uint16))
    assert len(f) == 6
    assert f.contains_many([1, 2, 3, "x", 4, 5]).all()
    f.update()
    assert len(f) == 6


# ---- bad input leaves the filter unchanged ------------------------------------------------------

BAD_KEYS = [
    (None, TypeError, r"None"),
    (1.5, TypeError, r"float"),
    (np.float64(1.0), TypeError, r"float"),
    (2**64, ValueError, r"64 bits"),
    (-(2**63) - 1, ValueError, r"64 bits"),
    (10**30, ValueError, r"64 bits"),
    (object(), TypeError, r"object"),
    ([1], TypeError, r"list"),
    ((1,), TypeError, r"tuple"),
    ({1}, TypeError, r"set"),
    (1j, TypeError, r"complex"),
    (np.float32(1), TypeError, r"float32"),
    ("\ud800", ValueError, r"surrogate"),
]

SCALAR_METHODS = ["add", "add_unique", "discard", "remove", "count", "__contains__", "bucket_indices"]


@pytest.fixture
def loaded() -> Filter:
    f = Filter(1000, fingerprint_bits=16)
    f.add_many(range(200))
    return f


@pytest.mark.parametrize("method", SCALAR_METHODS)
@pytest.mark.parametrize("key, exc, message", BAD_KEYS, ids=[repr(k[0]) for k in BAD_KEYS])
def test_bad_scalar_key(loaded, method, key, exc, message):
    before = loaded.copy()
    with pytest.raises(exc, match=message):
        getattr(loaded, method)(key)
    assert loaded == before and len(loaded) == 200


@pytest.mark.parametrize("key, exc, message", BAD_KEYS, ids=[repr(k[0]) for k in BAD_KEYS])
def test_bad_key_with_in_operator(loaded, key, exc, message):
    with pytest.raises(exc, match=message):
        key in loaded  # noqa: B015


BULK_METHODS = ["add_many", "add_unique_many", "discard_many", "contains_many", "count_many", "update"]

BAD_BATCHES = [
    ([1, 2, None], TypeError, r"None"),
    ([1, 2, 3.0], TypeError, r"float"),
    ([1, 2, 2**64], ValueError, r"64 bits"),
    (["a", b"b", object()], TypeError, r"object"),
    (["a", "\udfff"], ValueError, r"surrogate"),
    (np.array([1.0, 2.0]), TypeError, r"float"),
    (np.array([1, 2], dtype=np.float32), TypeError, r"float"),
    (np.array([True, False]), TypeError, r"boolean"),
    (np.zeros((2, 2), dtype=np.int64), ValueError, r"one-dimensional"),
    (np.array([1, None], dtype=object), TypeError, r"None"),
    (np.array(["ok", "\ud800"]), ValueError, r"not valid Unicode"),
    (np.array([1 + 2j]), TypeError, r"complex|format"),
    (b"abc", TypeError, r"single bytes"),
    ("abc", TypeError, r"single str"),
    (bytearray(b"abc"), TypeError, r"single bytearray"),
    (5, TypeError, r"iterable"),
    (None, TypeError, r"iterable"),
]


@pytest.mark.parametrize("method", BULK_METHODS)
@pytest.mark.parametrize("keys, exc, message", BAD_BATCHES, ids=[f"batch{i}" for i in range(len(BAD_BATCHES))])
def test_bad_batch(loaded, method, keys, exc, message):
    before = loaded.copy()
    with pytest.raises(exc, match=message):
        getattr(loaded, method)(keys)
    assert loaded == before and len(loaded) == 200


def test_update_with_a_bad_later_iterable_changes_nothing(loaded):
    before = loaded.copy()
    with pytest.raises(TypeError):
        loaded.update([1000, 1001], [None])
    assert loaded == before


def test_alt_index_rejects_bad_arguments(loaded):
    m, f = loaded.bucket_count, loaded.fingerprint_bits
    with pytest.raises(ValueError, match=rf"index must be between 0 and {m - 1}"):
        loaded.alt_index(m, 1)
    with pytest.raises(ValueError, match="index"):
        loaded.alt_index(-1, 1)
    with pytest.raises(ValueError, match=rf"fingerprint must be between 1 and {2**f - 1}"):
        loaded.alt_index(0, 0)
    with pytest.raises(ValueError, match="fingerprint"):
        loaded.alt_index(0, 2**f)
    with pytest.raises(TypeError, match="index must be an int"):
        loaded.alt_index(0.0, 1)
    with pytest.raises(TypeError, match="fingerprint must be an int"):
        loaded.alt_index(0, None)


def test_bucket_indices_shape(loaded):
    i1, i2, fp = loaded.bucket_indices("k")
    assert all(type(v) is int for v in (i1, i2, fp))
    assert 0 <= i1 < loaded.bucket_count and 0 <= i2 < loaded.bucket_count and i1 != i2
    assert 1 <= fp < 2**loaded.fingerprint_bits
    assert loaded.alt_index(i1, fp) == i2 and loaded.alt_index(i2, fp) == i1


# ---- key semantics -----------------------------------------------------------------------------


@pytest.mark.parametrize("alias", [-1, 2**64 - 1, np.int8(-1), np.int16(-1), np.int32(-1), np.int64(-1),
                                   np.uint64(2**64 - 1)])
def test_ints_are_keyed_by_their_64_bit_word(wide_filter, alias):
    assert wide_filter.bucket_indices(alias) == wide_filter.bucket_indices(-1)
    wide_filter.add(alias)
    for other in (-1, 2**64 - 1, np.int8(-1), np.uint64(2**64 - 1)):
        assert other in wide_filter
    assert wide_filter.contains_many(np.array([-1], dtype=np.int8)).tolist() == [True]
    assert wide_filter.contains_many(np.array([2**64 - 1], dtype=np.uint64)).tolist() == [True]
    assert -2 not in wide_filter


def test_int_range_boundaries(wide_filter):
    for k in (-(2**63), 2**63 - 1, 2**63, 2**64 - 1, 0):
        wide_filter.add(k)
        assert k in wide_filter
    assert -(2**63) != 2**63 and wide_filter.bucket_indices(-(2**63)) == wide_filter.bucket_indices(2**63)


def test_int_equals_its_little_endian_bytes(wide_filter):
    for k in (0, 1, 12345, -1, 2**63):
        assert wide_filter.bucket_indices(k) == wide_filter.bucket_indices((k % 2**64).to_bytes(8, "little"))
    # and not its decimal text, nor its big-endian bytes
    assert wide_filter.bucket_indices(12345) != wide_filter.bucket_indices("12345")
    assert wide_filter.bucket_indices(12345) != wide_filter.bucket_indices((12345).to_bytes(8, "big"))


@pytest.mark.parametrize("text", ["", "a", "é", "naïve café", "日本語", "🦆", "a\x00b"])
def test_str_is_hashed_as_utf8(wide_filter, text):
    assert wide_filter.bucket_indices(text) == wide_filter.bucket_indices(text.encode("utf-8"))
    wide_filter.add(text)
    assert text.encode("utf-8") in wide_filter


def test_str_is_not_hashed_as_another_encoding(wide_filter):
    assert wide_filter.bucket_indices("é") != wide_filter.bucket_indices("é".encode("latin-1"))
    assert wide_filter.bucket_indices("é") != wide_filter.bucket_indices("é".encode("utf-16-le"))
    # NFC and NFD forms are different strings, hence different keys
    assert wide_filter.bucket_indices("\u00e9") != wide_filter.bucket_indices("e\u0301")


@pytest.mark.parametrize("data", [b"", b"abc", b"\x00\x01\x02" * 20])
def test_bytes_like_keys_are_their_bytes(wide_filter, data):
    want = wide_filter.bucket_indices(data)
    assert wide_filter.bucket_indices(bytearray(data)) == want
    assert wide_filter.bucket_indices(memoryview(data)) == want
    assert wide_filter.bucket_indices(memoryview(bytearray(data))) == want
    wide_filter.add(bytearray(data))
    assert data in wide_filter


def test_memoryview_of_wider_items_is_its_raw_bytes(wide_filter):
    arr = np.array([1, 2, 3], dtype="<u4")
    assert wide_filter.bucket_indices(memoryview(arr)) == wide_filter.bucket_indices(arr.tobytes())


def test_non_contiguous_memoryview_raises_type_or_value_error(loaded):
    with pytest.raises((TypeError, ValueError)):
        loaded.add(memoryview(b"abcdef")[::2])


def test_numpy_arrays_are_keyed_by_value(wide_filter):
    values = [0, 1, 100, -1, -100]
    wide_filter.add_many(values)
    for dtype in (np.int8, np.int16, np.int32, np.int64, ">i2", ">i4", ">i8"):
        arr = np.array(values, dtype=dtype)
        assert wide_filter.contains_many(arr).all(), dtype
        assert wide_filter.contains_many(arr[::2]).all(), dtype  # strided view
    pos = [0, 1, 100, 200]
    wide_filter.add_many(pos)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64, ">u2", ">u4", ">u8"):
        assert wide_filter.count_many(np.array(pos, dtype=dtype)).tolist() == [2, 2, 2, 1], dtype


def test_numpy_bytes_and_str_arrays(wide_filter):
    wide_filter.add_many([b"ab", "ab\u00e9", b""])
    # S arrays drop trailing NULs (as NumPy scalars do); U arrays are hashed as UTF-8
    assert wide_filter.contains_many(np.array([b"ab", b"ab\x00"], dtype="S5")).tolist() == [True, True]
    assert wide_filter.contains_many(np.array(["ab\u00e9", "ab", "abc"], dtype="U7")).tolist() == [True, True, False]
    assert wide_filter.contains_many(np.array(["ab\u00e9"], dtype=">U3")).tolist() == [True]
    assert wide_filter.contains_many(np.array([b""], dtype="S1")).tolist() == [True]
