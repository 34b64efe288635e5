"""The scalar calls (add, add_unique, discard, remove, count, __contains__, `in`) are CPython
methods installed on the type (src/scalar_calls.cpp), not pybind11 definitions: every way of
calling them gives the answers of the bulk calls, takes one argument (positional or `key=`),
keeps Python's method rules (unbound calls, subclasses overriding them), translates C++ errors
and leaks no references."""

from __future__ import annotations

import inspect
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cuckoo
from cuckoo import Filter, FilterFullError

SCALAR = ("add", "add_unique", "discard", "remove", "count", "__contains__")

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=10)
keys = st.one_of(st.integers(0, 15), st.integers(-(2**63), 2**64 - 1), st.binary(max_size=24), texts)


class Sub(Filter):
    """A subclass that does not override the scalar calls: it gets the same methods."""


def twin(kind: str, capacity: int, **kw) -> Filter:
    return (Sub if kind == "subclass" else Filter)(capacity, fingerprint_bits=32, **kw)


def call(f: Filter, kind: str, name: str, key):
    """f.<name>(key) in one of the ways Python code can call a method."""
    if kind == "keyword":
        return getattr(f, name)(key=key)
    if kind == "unbound":
        return getattr(Filter, name)(f, key)
    return getattr(f, name)(key)


@given(ops=st.lists(st.tuples(st.sampled_from(["add", "add_unique", "discard", "count", "__contains__"]), keys),
                    max_size=80),
       capacity=st.integers(1, 40), bucket_size=st.sampled_from([2, 4, 8]),
       kind=st.sampled_from(["positional", "keyword", "unbound", "subclass"]))
def test_scalar_calls_equal_the_bulk_calls_in_order(ops, capacity, bucket_size, kind):
    # Small filters fill up: scalar FilterFullError must leave the filter as the bulk call that
    # failed on the same key left it. 32-bit fingerprints: no false positive at this size.
    scalar = twin(kind, capacity, bucket_size=bucket_size)
    bulk = Filter(capacity, fingerprint_bits=32, bucket_size=bucket_size)
    bulk_call = {"add": bulk.add_many, "add_unique": bulk.add_unique_many, "discard": bulk.discard_many,
                 "count": bulk.count_many, "__contains__": bulk.contains_many}
    for name, key in ops:
        try:
            got = call(scalar, kind, name, key)
        except FilterFullError as e:
            with pytest.raises(FilterFullError) as bulk_error:
                bulk_call[name]([key])
            assert (e.inserted, e.reason) == (0, bulk_error.value.reason)
        else:
            expected = bulk_call[name]([key])
            if name == "add":
                assert got is None and expected == 1
            else:
                assert type(got) is (int if name == "count" else bool)
                assert got == expected[0]
        assert scalar == bulk and len(scalar) == len(bulk)
        assert (key in scalar) == bool(bulk.contains_many([key])[0])


@given(ks=st.lists(keys, max_size=30), seed=st.integers(0, 2**64 - 1))
def test_in_operator_equals_contains_method_and_bulk(ks, seed):
    f = Filter(100, fpr=0.01, seed=seed)
    f.add_many(ks[: len(ks) // 2])
    mask = f.contains_many(ks)
    for k, expected in zip(ks, mask):
        assert (k in f) is bool(expected) and f.__contains__(k) is bool(expected)


def test_remove_raises_key_error_with_the_key_and_keeps_the_filter():
    f = Filter(100)
    f.add(b"x")
    for call_remove in (lambda: f.remove(b"absent"), lambda: f.remove(key=b"absent"),
                        lambda: Filter.remove(f, b"absent")):
        with pytest.raises(KeyError) as info:
            call_remove()
        assert info.value.args == (b"absent",)
    assert len(f) == 1 and b"x" in f
    assert f.remove(key=b"x") is None and len(f) == 0


@pytest.mark.parametrize("name", SCALAR)
def test_one_argument_exactly(name):
    f = Filter(100)
    f.add_many([1, 2, 3])
    before = f.copy()
    method = getattr(f, name)
    for bad_call, message in ((lambda: method(), "exactly one argument"), (lambda: method(1, 2), "exactly one argument"),
                              (lambda: method(1, key=2), "exactly one argument"),
                              (lambda: method(k=1), "unexpected keyword argument 'k'")):
        with pytest.raises(TypeError, match=message) as info:
            bad_call()
        assert name in str(info.value)
    assert f == before


@pytest.mark.parametrize("name", SCALAR)
def test_signature_and_doc(name):
    method = getattr(Filter, name)
    assert list(inspect.signature(method).parameters) == ["self", "key"]
    assert method.__doc__ and method.__name__ == name


@pytest.mark.parametrize("name", SCALAR)
def test_unbound_call_on_another_type_raises_type_error(name):
    with pytest.raises(TypeError, match="Filter"):
        getattr(Filter, name)(object(), 1)


def test_a_subclass_override_is_called_and_reaches_the_base():
    calls = []

    class Logged(Filter):
        def add(self, key):
            calls.append(key)
            super().add(key)

        def __contains__(self, key):
            calls.append(("in", key))
            return super().__contains__(key)

    f = Logged(100)
    f.add("a")
    assert "a" in f and "b" not in f
    assert calls == ["a", ("in", "a"), ("in", "b")]
    assert f.count("a") == 1


@pytest.mark.parametrize("name", SCALAR)
def test_writes_to_a_read_only_filter_raise_read_only_error(tmp_path, name):
    f = Filter(100)
    f.add_many([1, 2])
    f.save(tmp_path / "f.cuckoo")
    ro = Filter.load(tmp_path / "f.cuckoo", mmap=True)
    if name in ("add", "add_unique", "discard", "remove"):
        with pytest.raises(cuckoo.ReadOnlyError, match="read-only"):
            getattr(ro, name)(1)
    else:
        assert getattr(ro, name)(1) in (1, True)
    assert ro == f


@pytest.mark.parametrize("key", [b"user-0000000000000001", "user-0000000000000001", "é" * 9, 12345, 2**64 - 1, -5])
def test_no_reference_is_leaked(key):
    f = Filter(10_000)
    before_key = sys.getrefcount(key)
    before_singletons = [sys.getrefcount(x) for x in (None, True, False)]
    for _ in range(1000):
        f.add(key)
        f.add_unique(key)
        key in f  # noqa: B015
        f.__contains__(key)
        f.count(key)
        f.discard(key)
    for _ in range(1000):
        f.discard(key)
    for _ in range(100):
        try:
            f.remove(key)
        except KeyError:
            pass
    assert sys.getrefcount(key) == before_key
    # None, True and False are immortal from Python 3.12 on; before, their counts must balance.
    assert [sys.getrefcount(x) for x in (None, True, False)] == pytest.approx(before_singletons, abs=10)


def test_bad_keys_raise_before_any_change():
    f = Filter(100)
    f.add(1)
    before = f.copy()
    for name in SCALAR:
        for key, exc in ((None, TypeError), (1.5, TypeError), (True, TypeError), (2**64, ValueError),
                         ("\ud800", ValueError)):
            with pytest.raises(exc):
                getattr(f, name)(key)
            with pytest.raises(exc):
                key in f  # noqa: B015
    assert f == before


def test_scalar_calls_while_bulk_calls_hold_the_filter_in_other_threads():
    # Scalar calls skip the lock while no other thread is inside the filter (alone_with_gil);
    # bulk calls in other threads work without the GIL under the lock. Every key must stay found
    # and every count exact: a scalar write racing a bulk one would lose fingerprints or counts
    # (a small, busy table makes such races likely: a mutant that never locks fails here).
    import threading

    import numpy as np
    from _threads import run_threads

    f = Filter(40_000, fingerprint_bits=32)
    resident = np.arange(10_000, dtype=np.uint64) * 2  # even: added once by the bulk thread
    churn = resident + 1  # odd: added and discarded over and over by the bulk thread
    scalar_keys = [-k for k in range(1, 5_001)]  # negative: the scalar thread's
    bulk_done = threading.Event()
    missing: list = []

    def bulk():
        try:
            f.add_many(resident)
            for _ in range(500):
                f.add_many(churn)
                if not f.contains_many(resident).all():
                    missing.append("resident")
                f.discard_many(churn)
        finally:
            bulk_done.set()

    def scalar():
        for k in scalar_keys:
            f.add(k)
        while not bulk_done.is_set():  # keep writing and reading while the bulk thread writes
            for k in scalar_keys[:2000]:
                f.add(k)
            for k in scalar_keys[:2000]:
                f.discard(k)
            for k in scalar_keys:
                if k not in f:
                    missing.append(k)

    run_threads([bulk, scalar])
    assert missing == []
    assert len(f) == len(resident) + len(scalar_keys)
    assert f.count_many(resident).max() == 1 and f.count_many(scalar_keys).min() == 1
    assert not f.contains_many(churn).any()
