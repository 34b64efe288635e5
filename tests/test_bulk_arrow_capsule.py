"""Issue 22: bulk inputs from any Arrow producer through the Arrow PyCapsule interface
(``__arrow_c_stream__`` / ``__arrow_c_array__``), read through the C data interface without pyarrow.

Every producer (Polars, DuckDB, nanoarrow, arro3, and pyarrow objects seen only through their
capsules) must give the same answers as the list of Python keys it stands for (the scalar calls,
``check_bulk_equals_scalar``) and as the pyarrow path; nulls and non-key types are refused like the
pyarrow path refuses them; the producer's release callbacks are called (nothing kept, nothing
leaked). A subprocess that cannot import pyarrow shows Polars, DuckDB and nanoarrow inputs work
without it.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuckoo
from test_bulk_inputs import check_bulk_equals_scalar

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")
na = pytest.importorskip("nanoarrow")
a3 = pytest.importorskip("arro3.core")


class StreamOnly:
    """Any object exposing only __arrow_c_stream__ (the way Polars and DuckDB objects do): the
    capsule path reads it, not the pyarrow path."""

    def __init__(self, obj):
        self.obj = obj

    def __arrow_c_stream__(self, requested_schema=None):
        return self.obj.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    """Any object exposing only __arrow_c_array__ (nanoarrow's CArray, arro3's Array)."""

    def __init__(self, obj):
        self.obj = obj

    def __arrow_c_array__(self, requested_schema=None):
        return self.obj.__arrow_c_array__(requested_schema)


text = st.text(max_size=40)
binary = st.binary(max_size=40)
INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def int_values(t):
    bits = t.bit_width
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if pa.types.is_signed_integer(t) else (0, 2**bits - 1)
    return st.integers(lo, hi)


def pyarrow_layouts(keys: list, kind: str) -> dict:
    """The layouts a producer may emit for `keys`, as pyarrow arrays (exported through capsules)."""
    if kind == "str":
        types = [pa.string(), pa.large_string(), pa.string_view()]
    else:
        types = [pa.binary(), pa.large_binary(), pa.binary_view()]
    out = {str(t): pa.array(keys, t) for t in types}
    out["dictionary"] = pa.array(keys, types[0]).dictionary_encode()
    if kind == "bytes" and keys and len({len(k) for k in keys}) == 1 and len(keys[0]) > 0:
        out["fixed_size_binary"] = pa.array(keys, pa.binary(len(keys[0])))
    return out


def sliced(arr, keys):
    """arr with one key before and after the keys (offset != 0, a parent longer than the slice)."""
    pad = keys[:1] or [""]
    whole = pa.concat_arrays([pa.array(pad, arr.type), arr, pa.array(pad, arr.type)]) if not pa.types.is_dictionary(
        arr.type) else pa.array(pad + keys + pad, arr.type.value_type).dictionary_encode()
    return whole.slice(1, len(keys))


def producers(keys: list, kind: str) -> dict:
    """name -> make(): a fresh input of every producer standing for `keys`."""
    out = {}
    for name, arr in pyarrow_layouts(keys, kind).items():
        out[f"capsule array {name}"] = lambda arr=arr: ArrayOnly(arr)
        out[f"capsule stream {name}"] = lambda arr=arr: StreamOnly(pa.chunked_array([arr]))
        out[f"capsule sliced {name}"] = lambda arr=arr: ArrayOnly(sliced(arr, keys))
        half = len(keys) // 2
        chunked = pa.chunked_array([arr.slice(0, half), arr.slice(half)], arr.type)
        out[f"capsule chunked {name}"] = lambda chunked=chunked: StreamOnly(chunked)
    dtype = pl.Utf8 if kind == "str" else pl.Binary
    out["polars"] = lambda: pl.Series(keys, dtype=dtype)
    out["polars sliced"] = lambda: pl.Series(keys[:1] + keys + keys[:1], dtype=dtype)[1 : 1 + len(keys)]
    out["polars chunked"] = lambda: pl.concat([pl.Series(keys[:2], dtype=dtype), pl.Series(keys[2:], dtype=dtype)],
                                              rechunk=False)
    out["polars one-column DataFrame"] = lambda: pl.DataFrame({"k": pl.Series(keys, dtype=dtype)})
    if kind == "str":
        out["polars categorical"] = lambda: pl.Series(keys, dtype=pl.Categorical)
    na_type = na.string() if kind == "str" else na.binary()
    out["nanoarrow Array"] = lambda: na.Array(keys, na_type)
    out["nanoarrow CArray"] = lambda: na.c_array(keys, na_type)
    out["arro3 Array"] = lambda: a3.Array(pa.array(keys, pa.string() if kind == "str" else pa.binary()))
    return out


def duckdb_result(keys: list, sql_type: str):
    """A DuckDB query result (a relation) of one column holding `keys`, in order."""
    con = duckdb.connect()
    con.execute(f"create table t (i bigint, k {sql_type})")
    if keys:
        con.executemany("insert into t values (?, ?)", list(enumerate(keys)))
    return con, con.sql("select k from t order by i")


@settings(max_examples=25, deadline=None)
@given(st.lists(text, max_size=30))
def test_string_producers_equal_scalar_and_pyarrow(keys):
    for name, make in producers(keys, "str").items():
        check_bulk_equals_scalar(make, keys)
    f = cuckoo.Filter(1000, fingerprint_bits=32)
    f.add_many(keys[::2])
    want = f.contains_many(pa.array(keys, pa.string())).tolist()
    assert want == f.contains_many(keys).tolist()
    for name, make in producers(keys, "str").items():
        assert f.contains_many(make()).tolist() == want, name
    con, rel = duckdb_result(keys, "varchar")
    with con:
        check_bulk_equals_scalar(lambda: con.sql("select k from t order by i"), keys)
        assert f.contains_many(rel).tolist() == want


@settings(max_examples=25, deadline=None)
@given(st.lists(binary, max_size=30))
def test_binary_producers_equal_scalar_and_pyarrow(keys):
    for name, make in producers(keys, "bytes").items():
        check_bulk_equals_scalar(make, keys)
    con, _ = duckdb_result(keys, "blob")
    with con:
        check_bulk_equals_scalar(lambda: con.sql("select k from t order by i"), keys)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_integer_producers_of_every_width(data):
    t = data.draw(st.sampled_from(INT_TYPES))
    keys = data.draw(st.lists(int_values(t), max_size=30))
    arr = pa.array(keys, t)
    makes = {
        "capsule array": lambda: ArrayOnly(arr),
        "capsule sliced": lambda: ArrayOnly(pa.array([0] + keys + [0], t).slice(1, len(keys))),
        "capsule chunked": lambda: StreamOnly(pa.chunked_array([arr.slice(0, 3), arr.slice(3)], t)),
        "polars": lambda: pl.from_arrow(arr),
        "nanoarrow": lambda: na.Array(arr),
        "arro3": lambda: a3.Array(arr),
    }
    for name, make in makes.items():
        check_bulk_equals_scalar(make, keys)
        f = cuckoo.Filter(1000, fingerprint_bits=32)
        f.add_many(keys[::2])
        assert f.contains_many(make()).tolist() == f.contains_many(arr).tolist(), name


@settings(max_examples=15, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=20, unique=True))
def test_store_reads_every_producer(keys):
    values = [k[::-1] for k in keys]
    for name, make in producers([k.decode("latin-1") for k in keys], "str").items():
        as_str = [k.decode("latin-1") for k in keys]
        ref = cuckoo.Store()
        ref.put_many(as_str, values)
        s = cuckoo.Store()
        s.put_many(make(), values)
        assert s.get_many(as_str) == values, name
        assert s.get_many(make()) == ref.get_many(as_str), name
        assert s.contains_many(make()).all(), name
        assert s.discard_many(make()).tolist() == [True] * len(keys), name
        assert len(s) == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: pl.Series(["a", None, "b", None]),
        lambda: ArrayOnly(pa.array(["a", None, "b", None])),
        lambda: ArrayOnly(pa.array([1, None, 2, None], pa.int32())),
        lambda: na.Array(["a", None, "b", None], na.string()),
        lambda: StreamOnly(pa.chunked_array([["x"], ["a", None, "b", None]])),
        lambda: ArrayOnly(pa.array(["a", None, "b", None]).dictionary_encode()),
        lambda: ArrayOnly(pa.array([None, None], pa.null())),
    ],
)
def test_nulls_are_refused_like_the_pyarrow_path(make):
    f = cuckoo.Filter(100)
    f.add("a")
    before = f.to_bytes()
    with pytest.raises(ValueError, match=r"keys contain 2 null value\(s\): nulls are not keys"):
        f.add_many(make())
    with pytest.raises(ValueError, match=r"keys contain 2 null value\(s\): nulls are not keys"):
        f.add_many(pa.array(["a", None, "b", None]))
    assert f.to_bytes() == before
    # a slice that leaves the nulls out holds none
    assert ArrayOnly(pa.array(["a", None, "b"]).slice(2)).__arrow_c_array__() is not None
    assert f.contains_many(ArrayOnly(pa.array(["a", None, "b"]).slice(2))).tolist() == [False]


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: pl.Series([1.5, 2.0]), r"float column \(Arrow format 'g'\)"),
        (lambda: pl.Series([True]), r"boolean column \(Arrow format 'b'\)"),
        (lambda: ArrayOnly(pa.array([1.5], pa.float32())), r"float column \(Arrow format 'f'\)"),
        (lambda: pl.Series([datetime.date(2020, 1, 1)]), r"date/time column \(Arrow format 'tdD'\)"),
        (lambda: ArrayOnly(pa.array([[1]])), r"unsupported Arrow type \(format '\+l'\)"),
        (lambda: pl.DataFrame({"a": [1], "b": [2]}), r"Arrow table or struct of 2 columns"),
    ],
)
def test_non_key_types_raise_typeerror_naming_the_format(make, words):
    f = cuckoo.Filter(100)
    f.add(1)
    before = f.to_bytes()
    with pytest.raises(TypeError, match=words):
        f.add_many(make())
    with pytest.raises(TypeError, match=words):
        cuckoo.Store().put_many(make())
    assert f.to_bytes() == before


class Fresh:
    """Builds a new pyarrow array at every export and drops its own reference: whatever the
    consumer does not release stays allocated in pyarrow's memory pool."""

    def __init__(self, keys, nulls=False):
        self.keys, self.nulls = keys, nulls

    def _array(self):
        keys = self.keys + ([None] if self.nulls else [])
        return pa.chunked_array([pa.array(keys, pa.string_view()), pa.array(keys[::-1], pa.string_view())])


class FreshStream(Fresh):
    def __arrow_c_stream__(self, requested_schema=None):
        return self._array().__arrow_c_stream__()


class FreshArray(Fresh):
    def __arrow_c_array__(self, requested_schema=None):
        keys = self.keys + ([None] if self.nulls else [])
        return pa.array(keys, pa.string()).__arrow_c_array__()


def test_release_callbacks_are_called_on_success_and_on_error():
    keys = [f"key-{i:06d}-{'x' * (i % 30)}" for i in range(20000)]
    f = cuckoo.Filter(100000)
    s = cuckoo.Store()
    for src in (FreshStream, FreshArray):
        baseline = pa.total_allocated_bytes()
        for _ in range(3):
            f.update(src(keys))
            f.contains_many(src(keys))
            s.put_many(src(keys))
            with pytest.raises(ValueError, match="null"):
                f.add_many(src(keys, nulls=True))
            with pytest.raises(ValueError, match="null"):
                s.contains_many(src(keys, nulls=True))
        assert pa.total_allocated_bytes() == baseline, src.__name__


def test_a_capsule_that_is_not_one_is_a_clear_error():
    class Liar:
        def __arrow_c_stream__(self, requested_schema=None):
            return b"not a capsule"

    with pytest.raises(TypeError, match=r"__arrow_c_stream__\(\) did not return a PyCapsule named 'arrow_array_stream'"):
        cuckoo.Filter(10).contains_many(Liar())


HIDDEN_PYARROW = r"""
import importlib.abc, json, sys

class BlockPyarrow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(f"{name} is hidden in this test")
        return None

sys.meta_path.insert(0, BlockPyarrow())
# as if it were not installed: importlib.util.find_spec("pyarrow") (how Polars probes) says None
sys.modules["pyarrow"] = None
try:
    import pyarrow  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("pyarrow is importable")

import duckdb, nanoarrow as na, polars as pl
import cuckoo

keys, probe = json.loads(sys.stdin.read())
f = cuckoo.Filter(10000, fingerprint_bits=32, seed=7)
f.add_many(pl.Series(keys))
con = duckdb.connect()
con.execute("create table t (i bigint, k varchar)")
con.executemany("insert into t values (?, ?)", list(enumerate(probe)))
out = {
    "polars": f.contains_many(pl.Series(probe)).tolist(),
    "polars view of a DataFrame column": f.contains_many(pl.DataFrame({"k": probe})["k"]).tolist(),
    "duckdb": f.contains_many(con.sql("select k from t order by i")).tolist(),
    "nanoarrow": f.contains_many(na.Array(probe, na.string())).tolist(),
    "pyarrow_loaded": sys.modules.get("pyarrow") is not None,
}
print(json.dumps(out))
"""


def test_polars_duckdb_nanoarrow_without_pyarrow_match_the_pyarrow_path():
    keys = [f"user-{i:016x}" for i in range(0, 4000, 2)] + ["short", "", "ü-ñ"]
    probe = [f"user-{i:016x}" for i in range(3000)] + ["short", "", "nope", "ü-ñ"]
    f = cuckoo.Filter(10000, fingerprint_bits=32, seed=7)
    f.add_many(pa.array(keys))
    want = f.contains_many(pa.array(probe)).tolist()
    assert want == [k in f for k in probe]
    result = subprocess.run([sys.executable, "-c", HIDDEN_PYARROW], input=json.dumps([keys, probe]),
                            capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got.pop("pyarrow_loaded") is False
    for producer, answers in got.items():
        assert answers == want, producer
