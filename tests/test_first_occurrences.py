"""_core._first_occurrences, the exact decision of cuckoo.dask's shards: per piece of keys (in
order), whether each key is the first of its value over all pieces, against a Python model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuckoo import _core


def model(pieces):
    seen = set()
    out = []
    for piece in pieces:
        mask = []
        for k in piece:
            mask.append(k not in seen)
            seen.add(k)
        out.append(mask)
    return out


small_ints = st.lists(st.lists(st.integers(-40, 40), max_size=60), max_size=6)


@settings(max_examples=200, deadline=None)
@given(small_ints, st.integers(0, 2**64 - 1))
def test_int_pieces_equal_the_model_for_any_seed(pieces, seed):
    got = _core._first_occurrences([np.array(p, dtype=np.int64) for p in pieces], seed)
    assert [g.tolist() for g in got] == model(pieces)
    assert all(g.dtype == np.bool_ for g in got)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=12), max_size=40), max_size=5))
def test_bytes_pieces_equal_the_model(pieces):
    got = _core._first_occurrences([list(p) for p in pieces], 7)
    assert [g.tolist() for g in got] == model(pieces)


def test_string_columns_of_every_form_and_a_large_set():
    pd = pytest.importorskip("pandas")
    words = [f"k{i % 5000}" for i in range(12000)]
    pieces = [words[:3000], words[3000:7000], words[7000:]]
    want = model(pieces)
    for form in (list, lambda p: np.array(p, dtype=object), lambda p: pd.Series(p, dtype="string[pyarrow]")):
        got = _core._first_occurrences([form(p) for p in pieces], 1)
        assert [g.tolist() for g in got] == want
    # Past the first chunk of keys (65,536 hashed at a time).
    rng = np.random.default_rng(3)
    big = rng.integers(0, 150_000, 300_000)
    got = _core._first_occurrences([big[:100_000], big[100_000:]], 2)
    first = np.zeros(len(big), bool)
    first[np.unique(big, return_index=True)[1]] = True
    assert np.array_equal(np.concatenate(got), first)


def test_bad_input_names_the_problem():
    with pytest.raises(TypeError):
        _core._first_occurrences([np.array([1.5, 2.5])], 0)
    with pytest.raises(TypeError):
        _core._first_occurrences([[1, None]], 0)
    assert _core._first_occurrences([], 0) == []
