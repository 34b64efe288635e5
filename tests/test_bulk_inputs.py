"""Issue 3, inputs: every bulk input kind gives the same answers as the scalar calls on the same
keys, and every input that is not a batch of keys raises a clear TypeError/ValueError naming the
problem, leaving the filter unchanged.

"The same answers" is checked operation by operation against the scalar methods applied one key
at a time, in order (``check_bulk_equals_scalar``): ``add_many`` and ``add_unique_many`` must leave
a filter equal (``==``) to the one the scalar calls build, and every returned array must equal the
list of scalar results. The Python keys an input stands for are what its library says its
elements are (``ndarray.tolist()``, NumPy scalars, ``pyarrow.Array.to_pylist()``,
``Series.tolist()``), so NumPy's own semantics (an ``S`` scalar loses its trailing NULs) are the
reference.
"""

from __future__ import annotations

import collections
import re
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cuckoo

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def new_filter(hash_algorithm: str = "xxh3") -> cuckoo.Filter:
    # 32-bit fingerprints: with a few hundred keys a false positive (about 8 / 2**32 per lookup)
    # does not happen, so the ground-truth assertions below are exact. Growable only so that a
    # key repeated more than 2 * bucket_size times (hypothesis likes arrays of zeros) still fits:
    # until it grows, a growable filter runs the same single-stage loops as a fixed one.
    return cuckoo.Filter(4000, fingerprint_bits=32, growable=True, hash_algorithm=hash_algorithm)


def check_bulk_equals_scalar(make, keys) -> None:
    """make() returns a fresh bulk input standing for the Python keys `keys`, in order. Checked
    for both key hashes: their bulk paths differ (XXH64 filters hash short string keys and
    integers in vector kernels, XXH3 filters key by key)."""
    keys = list(keys)
    for hash_algorithm in ("xxh3", "xxh64"):
        _check_bulk_equals_scalar(make, keys, lambda: new_filter(hash_algorithm))


def _check_bulk_equals_scalar(make, keys, new_filter) -> None:
    n = len(keys)

    # add_many == add one by one: also where a key's copies overflow (more than 2b copies of a
    # key fail at the same key, growable or not)
    bulk, scalar = new_filter(), new_filter()
    try:
        handled = bulk.add_many(make())
    except cuckoo.FilterFullError as e:
        assert e.reason == "copies"
        handled = e.inserted
    scalar_handled = 0
    for k in keys:
        try:
            scalar.add(k)
        except cuckoo.FilterFullError:
            break
        scalar_handled += 1
    assert handled == scalar_handled
    assert bulk == scalar
    assert len(bulk) == handled
    # update == add_unique one by one (set.update: each key once)
    upd, scalar_unique = new_filter(), new_filter()
    upd.update(make())
    for k in keys:
        scalar_unique.add_unique(k)
    assert upd == scalar_unique

    # a filter holding every other distinct key once and every fourth twice
    base = new_filter()
    distinct = list({bytes(k) if isinstance(k, (bytearray, memoryview)) else k: k for k in keys}.values())
    for k in distinct[::2]:
        base.add(k)
    for k in distinct[::4]:
        base.add(k)

    contains = base.contains_many(make())
    assert contains.dtype == np.bool_ and contains.shape == (n,)
    assert contains.tolist() == [k in base for k in keys]
    counts = base.count_many(make())
    assert counts.dtype == np.uint8 and counts.shape == (n,)
    assert counts.tolist() == [base.count(k) for k in keys]

    bulk, scalar = base.copy(), base.copy()
    mask = bulk.add_unique_many(make())
    assert mask.dtype == np.bool_ and mask.shape == (n,)
    assert mask.tolist() == [scalar.add_unique(k) for k in keys]
    assert bulk == scalar

    bulk, scalar = base.copy(), base.copy()
    removed = bulk.discard_many(make())
    assert removed.dtype == np.bool_ and removed.shape == (n,)
    assert removed.tolist() == [scalar.discard(k) for k in keys]
    assert bulk == scalar


# ---- NumPy integer arrays ----------------------------------------------------------------------


def int_extremes(dtype) -> list:
    info = np.iinfo(dtype)
    vals = {int(info.min), int(info.max), 0, 1, int(info.max) - 1, int(info.min) + 1, int(info.max) // 3}
    if info.min < 0:
        vals |= {-1, -2}
    return sorted(vals)


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_int_arrays_every_width_sign_and_byte_order(dtype, order):
    dt = np.dtype(dtype).newbyteorder(order)
    arr = np.array(int_extremes(dtype) * 2, dtype=dt)
    assert arr.dtype.byteorder in ("<", ">", "|", "=")
    check_bulk_equals_scalar(lambda: arr, arr.tolist())
    check_bulk_equals_scalar(lambda: arr[::-1], arr[::-1].tolist())  # negative stride
    check_bulk_equals_scalar(lambda: arr[1::3], arr[1::3].tolist())  # strided, offset


int_dtypes = hnp.integer_dtypes(endianness="?") | hnp.unsigned_integer_dtypes(endianness="?")


@given(
    arr=int_dtypes.flatmap(lambda dt: hnp.arrays(dt, st.integers(0, 40))),
    step=st.sampled_from([1, 2, 3, -1, -2, -5]),
    start=st.integers(0, 3),
    read_only=st.booleans(),
)
def test_int_arrays_property(arr, step, start, read_only):
    view = arr[start::step]
    if read_only:
        view.setflags(write=False)
    check_bulk_equals_scalar(lambda: view, view.tolist())


@pytest.mark.parametrize("fingerprint_bits", [16, 13], ids=["f16-aligned", "f13-one-load"])
def test_lookups_on_a_table_larger_than_the_caches(fingerprint_bits):
    # Tables above 8 MiB take the lookup kernel's other way (bucket 2 read only when bucket 1 misses,
    # pipelined over blocks): its answers are the scalar ones, for int and string keys.
    rng = np.random.default_rng(fingerprint_bits)
    f = cuckoo.Filter(5_000_000, fingerprint_bits=fingerprint_bits, bucket_size=4)
    assert f.nbytes > 8 * 2**20
    stored = rng.integers(0, 2**64 - 1, size=int(0.9 * f.slot_count), dtype=np.uint64)
    f.add_many(stored)
    words = np.array([b"key-%d" % i for i in range(30_000)], dtype="S24")
    f.add_many(words[::2])
    queries = np.concatenate([stored[:20_001], rng.integers(0, 2**64 - 1, size=20_000, dtype=np.uint64)])
    rng.shuffle(queries)
    found = f.contains_many(queries)
    assert found.tolist() == [int(k) in f for k in queries.tolist()]
    assert found.sum() >= 20_001  # every stored key among the queries
    found_words = f.contains_many(words)
    assert found_words.tolist() == [bytes(w) in f for w in words.tolist()]
    assert found_words[::2].all()


@pytest.mark.parametrize("byte_offset", [0, 1, 4, 7])
@pytest.mark.parametrize("dtype", ["<u8", ">u8", "<i8"])
def test_int64_arrays_at_any_byte_offset(byte_offset, dtype):
    # Contiguous native 8-byte-aligned arrays are hashed in place, the others value by value:
    # both give the keys' values.
    values = np.array([0, 1, 2**63 - 1, 2**63 if dtype != "<i8" else -(2**63), 12345, 2**40 + 3] * 7, dtype=dtype)
    raw = np.zeros(values.nbytes + 8, dtype=np.uint8)  # NumPy allocations are 16-byte aligned
    raw[byte_offset : byte_offset + values.nbytes] = values.view(np.uint8)
    view = raw[byte_offset : byte_offset + values.nbytes].view(dtype)
    assert view.tolist() == values.tolist()
    assert (view.ctypes.data % 8 == 0) == (byte_offset == 0)
    check_bulk_equals_scalar(lambda: view, view.tolist())


def test_int_key_is_its_value_whatever_the_dtype():
    f = new_filter()
    f.add_many(np.array([5, -1, 200], dtype=np.int16))
    for dt in INT_DTYPES + [">i8", ">u2"]:
        assert f.contains_many(np.array([5], dtype=dt)).tolist() == [True], dt
    # int8 -1 is the key -1 (two's-complement word 2**64 - 1), never the byte 255
    assert f.contains_many(np.array([-1], dtype=np.int8)).tolist() == [True]
    assert f.contains_many(np.array([255], dtype=np.uint8)).tolist() == [False]
    assert f.contains_many(np.array([2**64 - 1], dtype=np.uint64)).tolist() == [True]
    assert f.contains_many(np.array([200], dtype=np.uint8)).tolist() == [True]
    assert f.contains_many(np.array([200 - 256], dtype=np.int8)).tolist() == [False]


def test_non_contiguous_and_field_views():
    grid = np.arange(60, dtype=np.int64).reshape(6, 10)
    col = grid[:, 3]  # stride 80 bytes
    check_bulk_equals_scalar(lambda: col, col.tolist())
    rec = np.zeros(7, dtype=[("a", "<i4"), ("key", ">u2"), ("s", "S3")])
    rec["key"] = np.arange(7) * 1000
    rec["s"] = [b"a", b"bb\x00", b"", b"ccc", b"a\x00b", b"x", b"yz"]
    check_bulk_equals_scalar(lambda: rec["key"], rec["key"].tolist())
    check_bulk_equals_scalar(lambda: rec["s"], [bytes(x) for x in rec["s"]])
    check_bulk_equals_scalar(lambda: rec["s"][::-2], [bytes(x) for x in rec["s"][::-2]])


@pytest.mark.parametrize("dtype", INT_DTYPES + ["S4", "U3", object], ids=str)
def test_zero_length_arrays(dtype):
    arr = np.array([], dtype=dtype)
    check_bulk_equals_scalar(lambda: arr, [])
    check_bulk_equals_scalar(lambda: np.arange(10)[5:5], [])


def test_read_only_arrays():
    arr = np.frombuffer(np.arange(30, dtype=np.uint32).tobytes(), dtype=np.uint32)
    assert not arr.flags.writeable
    check_bulk_equals_scalar(lambda: arr, arr.tolist())
    s = np.frombuffer(b"ab\x00cd\x00\x00\x00ef", dtype="S2")
    assert not s.flags.writeable
    check_bulk_equals_scalar(lambda: s, [bytes(x) for x in s])


def test_masked_arrays_without_masked_values_and_other_subclasses():
    m = np.ma.array([4, 5, 6], mask=[False, False, False])
    check_bulk_equals_scalar(lambda: m, [4, 5, 6])
    check_bulk_equals_scalar(lambda: np.ma.array(["a", "b"]), ["a", "b"])
    class Tagged(np.ndarray):
        pass

    t = np.arange(5, dtype=np.int32).view(Tagged)
    check_bulk_equals_scalar(lambda: t, [0, 1, 2, 3, 4])


def test_other_buffer_exporters():
    import array

    a = array.array("q", [1, -5, 2**62])
    check_bulk_equals_scalar(lambda: a, list(a))
    b = array.array("H", [1, 65535])
    check_bulk_equals_scalar(lambda: memoryview(b), list(b))


# ---- NumPy S and U arrays ----------------------------------------------------------------------


def test_s_arrays_follow_numpy_scalar_semantics():
    arr = np.array([b"ab", b"ab\x00", b"a\x00b", b"\x00ab", b"", b"\x00", b"abcdefgh\x00"], dtype="S12")
    keys = [bytes(x) for x in arr]
    # NumPy drops trailing NULs (they are padding) and keeps embedded and leading ones
    assert keys == [b"ab", b"ab", b"a\x00b", b"\x00ab", b"", b"", b"abcdefgh"]
    check_bulk_equals_scalar(lambda: arr, keys)
    f = new_filter()
    f.add_many(arr)
    assert f.contains_many([b"ab", b"a\x00b", b"\x00ab", b"", b"abcdefgh"]).all()
    assert f.contains_many([b"ab\x00", b"\x00", b"a", b"abcdefgh\x00"]).tolist() == [False] * 4
    assert f.count(b"ab") == 2 and f.count(b"") == 2


@given(
    values=st.lists(st.binary(max_size=70), max_size=30),
    extra_width=st.integers(0, 9),
    step=st.sampled_from([1, 2, -1, -3]),
)
def test_s_arrays_property(values, extra_width, step):
    # np.array drops trailing NULs of the values as it stores them: the NumPy scalars read back
    # are the reference, whatever the padding. Widths reach past 64 bytes: items of 16 to 64 bytes
    # take a 16-bytes-at-a-time path, the others a word-at-a-time one.
    width = max([len(v) for v in values] + [1]) + extra_width
    view = np.array(values, dtype=f"S{width}")[::step]
    check_bulk_equals_scalar(lambda: view, [bytes(x) for x in view])


@given(
    values=st.lists(st.binary(max_size=32), max_size=70),
    extra_width=st.integers(0, 3),
    step=st.sampled_from([1, 1, 1, 2]),
)
def test_short_s_arrays_property(values, extra_width, step):
    # XXH64 filters: contiguous 'S' arrays up to 32 bytes wide are hashed by the core's vector
    # kernel, which reads each item as a 32-byte row (the next items' bytes, or the array's end,
    # lie inside it) and finds the length in the row; items of exactly 32 bytes and the last rows
    # of the array take the scalar path. XXH3 filters: the items' lengths, then the block hash by
    # length class.
    width = min(max([len(v) for v in values] + [1]) + extra_width, 32)
    view = np.array(values, dtype=f"S{width}")[::step]
    check_bulk_equals_scalar(lambda: view, [bytes(x) for x in view])


def test_u_arrays_non_ascii_astral_and_nuls():
    words = ["a", "é", "日本語", "😀", "a😀b", "\U0010ffff", "a\x00b", "ab\x00", "", "\x00", "ß" * 9]
    for order in "<>":
        arr = np.array(words, dtype=np.dtype("U12").newbyteorder(order))
        keys = [str(x) for x in arr]
        assert keys[6] == "a\x00b" and keys[7] == "ab" and keys[9] == ""  # NumPy strips trailing NULs
        check_bulk_equals_scalar(lambda: arr, keys)
        check_bulk_equals_scalar(lambda: arr[::-2], [str(x) for x in arr[::-2]])
    f = new_filter()
    f.add_many(np.array(["é", "😀"], dtype=">U1"))
    assert "é" in f and "😀" in f and "é".encode() in f  # str keys are their UTF-8 bytes


@given(
    values=st.lists(st.text(max_size=8), max_size=30),
    extra_width=st.integers(0, 5),
    order=st.sampled_from("<>"),
    step=st.sampled_from([1, 2, -1]),
)
def test_u_arrays_property(values, extra_width, order, step):
    width = max([len(v) for v in values] + [1]) + extra_width
    view = np.array(values, dtype=np.dtype(f"U{width}").newbyteorder(order))[::step]
    check_bulk_equals_scalar(lambda: view, [str(x) for x in view])


# ---- Python objects ----------------------------------------------------------------------------

MIXED = [1, -1, 2**64 - 1, -(2**63), b"x", "x", "é😀", b"", "", 0, np.int16(-7), np.uint64(2**63),
         np.bytes_(b"nb"), np.str_("ns"), bytearray(b"ba"), memoryview(b"mv")]


def test_object_arrays_of_mixed_keys():
    arr = np.empty(len(MIXED), dtype=object)
    arr[:] = MIXED
    check_bulk_equals_scalar(lambda: arr, MIXED)
    check_bulk_equals_scalar(lambda: arr[::-2], MIXED[::-1][::2])


@pytest.mark.parametrize(
    "make",
    [
        list,
        tuple,
        iter,
        lambda xs: (x for x in xs),
        lambda xs: map(lambda x: x, xs),
        lambda xs: collections.deque(xs),
    ],
    ids=["list", "tuple", "iterator", "generator", "map", "deque"],
)
def test_sequences_and_iterables(make):
    check_bulk_equals_scalar(lambda: make(MIXED), MIXED)


def test_ranges_sets_and_dict_keys():
    r = range(-50, 300, 7)
    check_bulk_equals_scalar(lambda: r, list(r))
    s = {3, "a", b"b", 2**64 - 1}
    check_bulk_equals_scalar(lambda: s, list(s))
    fs = frozenset(range(20))
    check_bulk_equals_scalar(lambda: fs, list(fs))
    d = {"k1": 1, 7: 2, b"k3": 3}
    check_bulk_equals_scalar(lambda: d.keys(), list(d))
    check_bulk_equals_scalar(lambda: d, list(d))  # like set.update(dict): the keys


key_values = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.binary(max_size=12),
    st.text(max_size=6),
    st.integers(-3, 3),
)


@given(st.lists(key_values, max_size=40))
def test_lists_and_object_arrays_property(keys):
    check_bulk_equals_scalar(lambda: keys, keys)
    check_bulk_equals_scalar(lambda: iter(keys), keys)
    arr = np.empty(len(keys), dtype=object)
    arr[:] = keys
    check_bulk_equals_scalar(lambda: arr, keys)


# ---- Arrow --------------------------------------------------------------------------------------

pa = pytest.importorskip("pyarrow")

VAR_TYPES = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
}
if hasattr(pa, "string_view"):
    VAR_TYPES["string_view"] = pa.string_view()
if hasattr(pa, "binary_view"):
    VAR_TYPES["binary_view"] = pa.binary_view()

ARROW_INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]

WORDS = ["a", "bb", "", "é😀", "a\x00b", "ab\x00", "longer key of thirty-two bytes!!", "a"]


def typed_words(t):
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view":
        return [w.encode() for w in WORDS]
    return WORDS


@pytest.mark.parametrize("name", list(VAR_TYPES))
def test_arrow_variable_width_arrays(name):
    t = VAR_TYPES[name]
    arr = pa.array(typed_words(t), type=t)
    check_bulk_equals_scalar(lambda: arr, arr.to_pylist())
    sliced = arr.slice(2, 4)  # non-zero offset
    assert sliced.offset == 2
    check_bulk_equals_scalar(lambda: sliced, sliced.to_pylist())
    empty = pa.array([], type=t)
    check_bulk_equals_scalar(lambda: empty, [])
    check_bulk_equals_scalar(lambda: arr.slice(3, 0), [])
    chunked = pa.chunked_array([arr.slice(0, 3), arr.slice(3), pa.array([], type=t), sliced], type=t)
    check_bulk_equals_scalar(lambda: chunked, chunked.to_pylist())
    no_chunks = pa.chunked_array([], type=t)
    check_bulk_equals_scalar(lambda: no_chunks, [])


def test_arrow_strings_match_numpy_and_python_keys():
    f = new_filter()
    f.add_many(pa.array(["x", "é"]))
    assert f.contains_many(np.array(["x", "é"])).all()
    assert f.contains_many(pa.array([b"x", "é".encode()], type=pa.binary())).all()
    assert "x" in f and b"x" in f
    # Arrow binary keeps trailing NULs: the element is those bytes, not NumPy padding
    g = new_filter()
    g.add_many(pa.array([b"ab\x00"], type=pa.binary()))
    assert b"ab\x00" in g and b"ab" not in g


@pytest.mark.parametrize("t", ARROW_INTS, ids=str)
def test_arrow_integer_arrays(t):
    vals = int_extremes(t.to_pandas_dtype())
    arr = pa.array(vals, type=t)
    check_bulk_equals_scalar(lambda: arr, arr.to_pylist())
    check_bulk_equals_scalar(lambda: arr.slice(1, 3), arr.slice(1, 3).to_pylist())
    chunked = pa.chunked_array([arr, arr.slice(2)])
    check_bulk_equals_scalar(lambda: chunked, chunked.to_pylist())
    check_bulk_equals_scalar(lambda: pa.array([], type=t), [])


def test_arrow_dictionary_encoded():
    arr = pa.array(WORDS).dictionary_encode()
    assert pa.types.is_dictionary(arr.type)
    check_bulk_equals_scalar(lambda: arr, arr.to_pylist())
    check_bulk_equals_scalar(lambda: arr.slice(1, 5), arr.slice(1, 5).to_pylist())
    ints = pa.array([5, -3, 5, 7], type=pa.int16()).dictionary_encode()
    check_bulk_equals_scalar(lambda: ints, ints.to_pylist())
    chunked = pa.chunked_array([arr, pa.array(["q", "a"]).dictionary_encode()])
    check_bulk_equals_scalar(lambda: chunked, chunked.to_pylist())


def test_arrow_empty_array_of_type_null_is_an_empty_batch():
    empty = pa.array([])  # what pyarrow infers from an empty list
    assert empty.type == pa.null()
    check_bulk_equals_scalar(lambda: empty, [])
    check_bulk_equals_scalar(lambda: pa.chunked_array([], type=pa.null()), [])


def test_arrow_fixed_size_binary():
    arr = pa.array([b"ab", b"b\x00", b"\x00\x00"], type=pa.binary(2))
    keys = arr.to_pylist()
    assert keys == [b"ab", b"b\x00", b"\x00\x00"]  # Arrow keeps every byte
    check_bulk_equals_scalar(lambda: arr, keys)
    check_bulk_equals_scalar(lambda: arr.slice(1), keys[1:])


@given(
    words=st.lists(st.text(max_size=10), max_size=30),
    name=st.sampled_from(sorted(VAR_TYPES)),
    cut=st.integers(0, 30),
    start=st.integers(0, 5),
    dictionary=st.booleans(),
)
def test_arrow_property(words, name, cut, start, dictionary):
    t = VAR_TYPES[name]
    values = [w.encode() for w in words] if t in (pa.binary(), pa.large_binary()) or name == "binary_view" else words
    arr = pa.array(values, type=t).slice(min(start, len(values)))
    if dictionary and name in ("string", "binary"):
        arr = arr.dictionary_encode()
    chunked = pa.chunked_array([arr.slice(0, cut), arr.slice(cut)], type=arr.type)
    check_bulk_equals_scalar(lambda: arr, arr.to_pylist())
    check_bulk_equals_scalar(lambda: chunked, chunked.to_pylist())


@given(
    keys=st.lists(st.binary(max_size=40), max_size=70),
    large=st.booleans(),
    start=st.integers(0, 3),
)
def test_arrow_binary_exact_buffers_property(keys, large, start):
    # A data buffer exactly as long as its keys (Arrow's own buffers are padded): the vector hash
    # reads each key of up to 31 bytes as a 32-byte row, so the last keys' rows would cross the
    # buffer's end and must take the scalar path instead (under ASan an overread fails this test).
    offsets = np.cumsum([0] + [len(k) for k in keys], dtype=np.int64 if large else np.int32)
    arr = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(keys),
        [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(keys))],
    ).slice(min(start, len(keys)))
    check_bulk_equals_scalar(lambda: arr, arr.to_pylist())


def _first_bad_offset(offsets: np.ndarray, data_size: int) -> int:
    prev = 0
    for k, o in enumerate(offsets.tolist()):
        if o < prev or o > data_size:
            return k
        prev = o
    raise AssertionError("the offsets are valid")


_OFFSET_DAMAGE = {
    "first_offset_negative": lambda o, n: o.__setitem__(0, -1),
    "a_middle_offset_decreases": lambda o, n: o.__setitem__(n // 2, o[n // 2 - 1] - 1),
    "an_offset_is_the_most_negative": lambda o, n: o.__setitem__(n // 2, np.iinfo(o.dtype).min),
    "an_offset_past_the_data": lambda o, n: o.__setitem__(n // 3, o[-1] + 1),
    "last_offset_past_the_data": lambda o, n: o.__setitem__(n, o[n] + 1),
    "a_decrease_at_the_end_of_a_chunk_of_the_check": lambda o, n: o.__setitem__(4096, o[4095] - 1),
}


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("damage", sorted(_OFFSET_DAMAGE))
def test_arrow_offsets_outside_the_data_are_rejected(damage, large, monkeypatch):
    # Offsets that point outside the data are caught before any key is read (never read outside a
    # buffer): the error names the first bad offset and the filter is left unchanged. Arrow checks
    # the first and last offsets of an array built from raw buffers itself, but not the others, so
    # the (offsets, data) pair is handed over directly here, as _inputs makes it from an Arrow
    # column; the middle cases also go through a real Arrow array below.
    from cuckoo import _inputs

    n = 9000  # more than two chunks of 4096 offsets in the vectorized check
    keys = [b"k%05d" % i + b"x" * (i % 20) for i in range(n)]
    data = b"".join(keys)
    offsets = np.cumsum([0] + [len(k) for k in keys], dtype=np.int64 if large else np.int32)
    _OFFSET_DAMAGE[damage](offsets, n)
    message = f"invalid offsets: offset {_first_bad_offset(offsets, len(data))} is out of order or past the data"
    f = cuckoo.Filter(4 * n)
    f.add_many(keys[:100])
    before = f.to_bytes()
    calls = (f.add_many, f.contains_many, f.add_unique_many, f.discard_many, f.count_many)
    if damage not in ("first_offset_negative", "last_offset_past_the_data"):
        arr = pa.Array.from_buffers(
            pa.large_binary() if large else pa.binary(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)]
        )
        for call in calls:
            with pytest.raises(ValueError, match=message):
                call(arr)
    monkeypatch.setattr(_inputs, "_arrow_parts", lambda arr: [(offsets, np.frombuffer(data, dtype=np.uint8))])
    for call in calls:
        with pytest.raises(ValueError, match=message):
            call(pa.array([b"routed to the Arrow path"]))
    assert f.to_bytes() == before


def test_every_key_length_through_arrow_and_s_arrays():
    # Keys of every length from 0 to 40 bytes, twice over (82 keys: several blocks of 32). XXH3
    # filters sort each block's keys by length class (9-16, 17-32, other) before hashing them, so
    # every class boundary must be met through every packed source. No byte is NUL, so NumPy 'S'
    # keeps every key whole.
    keys = [bytes((7 * i + j) % 251 + 1 for j in range(n)) for i, n in enumerate(list(range(41)) * 2)]
    check_bulk_equals_scalar(lambda: pa.array(keys, type=pa.binary()), keys)
    check_bulk_equals_scalar(lambda: pa.array(keys, type=pa.large_binary()), keys)
    check_bulk_equals_scalar(lambda: np.array(keys, dtype="S40"), keys)
    short = [k for k in keys if len(k) <= 32]
    check_bulk_equals_scalar(lambda: np.array(short, dtype="S32"), short)


# ---- pandas -------------------------------------------------------------------------------------

pd = pytest.importorskip("pandas")


def pandas_inputs():
    yield "int64", pd.Series([5, -1, 2**62, 0, 5], dtype="int64")
    yield "uint64", pd.Series([2**64 - 1, 0, 7], dtype="uint64")
    yield "int8", pd.Series([-128, 127, -1], dtype="int8")
    yield "Int64 (nullable, no NA)", pd.Series([1, 2, -3], dtype="Int64")
    yield "UInt64 (nullable, no NA)", pd.Series([2**64 - 1, 2], dtype="UInt64")
    yield "object str", pd.Series(WORDS, dtype=object)
    yield "object bytes", pd.Series([w.encode() for w in WORDS], dtype=object)
    yield "object mixed", pd.Series([1, "a", b"b"], dtype=object)
    yield "default str", pd.Series(WORDS)
    yield "string[python]", pd.Series(WORDS, dtype="string[python]")
    yield "string[pyarrow]", pd.Series(WORDS, dtype="string[pyarrow]")
    yield "ArrowDtype(string)", pd.Series(WORDS, dtype=pd.ArrowDtype(pa.string()))
    yield "ArrowDtype(large_binary)", pd.Series([w.encode() for w in WORDS], dtype=pd.ArrowDtype(pa.large_binary()))
    yield "ArrowDtype(int32)", pd.Series([1, -2, 3], dtype=pd.ArrowDtype(pa.int32()))
    yield "categorical str", pd.Series(WORDS, dtype="category")
    yield "categorical int", pd.Series([3, 1, 3, 2], dtype="category")
    yield "sliced", pd.Series(WORDS, dtype="string[pyarrow]").iloc[2:6]
    yield "non-default index", pd.Series([4, 5, 6], index=["x", "y", "z"])
    yield "Index str", pd.Index(WORDS)
    yield "Index int", pd.Index([10, 20, 30])
    yield "RangeIndex", pd.RangeIndex(3, 40, 4)
    yield "CategoricalIndex", pd.CategoricalIndex(["a", "b", "a"])
    yield "empty", pd.Series([], dtype="int64")
    yield "empty str", pd.Series([], dtype="string[pyarrow]")


@pytest.mark.parametrize("name,series", list(pandas_inputs()), ids=[n for n, _ in pandas_inputs()])
def test_pandas_inputs(name, series):
    keys = series.tolist()
    check_bulk_equals_scalar(lambda: series, keys)


def test_pandas_categorical_is_keyed_by_value():
    f = new_filter()
    f.add_many(pd.Series(["b", "a", "b"], dtype="category"))
    assert f.count("b") == 2 and f.count("a") == 1 and len(f) == 3


# ---- bad input: clear errors, filter unchanged -------------------------------------------------


def obj_array(items):
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def bad_generator():
    yield 1
    yield 2
    raise RuntimeError("generator failed")


BAD_NUMPY = [
    ("float64 array", lambda: np.array([1.0, 2.0]), TypeError, "float"),
    ("float32 array", lambda: np.array([1.0], np.float32), TypeError, "float"),
    ("float16 array", lambda: np.array([1.0], np.float16), TypeError, "float"),
    ("integral floats", lambda: np.arange(5, dtype=np.float64), TypeError, "float"),
    ("complex array", lambda: np.array([1 + 2j]), TypeError, "complex"),
    ("bool array", lambda: np.array([True, False]), TypeError, "bool"),
    ("datetime64 array", lambda: np.array(["2020-01-01"], "datetime64[D]"), TypeError, "datetime"),
    ("timedelta64 array", lambda: np.array([1], "timedelta64[s]"), TypeError, "timedelta"),
    ("0-d int array", lambda: np.array(5), ValueError, "0-dimensional"),
    ("0-d bytes array", lambda: np.array(b"ab"), ValueError, "0-dimensional"),
    ("2-d array", lambda: np.zeros((2, 3), np.int64), ValueError, "one-dimensional.*2 dimensions"),
    ("2-d str array", lambda: np.array([["a", "b"]]), ValueError, "one-dimensional"),
    ("structured array", lambda: np.zeros(3, [("a", "i4")]), TypeError, "unsupported array element type"),
    ("void array", lambda: np.zeros(3, "V4"), TypeError, "unsupported array element type"),
    ("object array with None", lambda: obj_array([1, None]), TypeError, "None"),
    ("object array with float", lambda: obj_array(["a", 1.5]), TypeError, "float"),
    ("object array with list", lambda: obj_array([1, [2]]), TypeError, "list"),
    ("U array with a lone surrogate", lambda: np.array(["ok", "\ud800"]), ValueError, "surrogate"),
    ("masked array with masked values", lambda: np.ma.array([1, 2, 3], mask=[0, 1, 0]), ValueError, "masked"),
]

BAD_PYTHON = [
    ("list with None", lambda: [1, "a", None], TypeError, "None"),
    ("list with float", lambda: [1, 2.0], TypeError, "float"),
    ("list with NaN", lambda: ["a", float("nan")], TypeError, "float"),
    ("list with numpy float", lambda: [1, np.float32(2)], TypeError, "float32"),
    ("list with complex", lambda: [1, 1j], TypeError, "complex"),
    ("nested list", lambda: [1, [2, 3]], TypeError, "list"),
    ("nested tuple", lambda: ((1, 2),), TypeError, "tuple"),
    ("mixed garbage", lambda: [1, "a", b"b", object()], TypeError, "object"),
    ("dict in list", lambda: [{}], TypeError, "dict"),
    ("int too large", lambda: [1, 2**64], ValueError, "64 bits"),
    ("int too small", lambda: [1, -(2**63) - 1], ValueError, "64 bits"),
    ("lone surrogate str", lambda: ["a", "\udc80"], ValueError, "surrogate"),
    ("generator raising", bad_generator, RuntimeError, "generator failed"),
    ("generator yielding None", lambda: (x for x in [1, 2, None]), TypeError, "None"),
    ("single str", lambda: "abc", TypeError, "single str"),
    ("single bytes", lambda: b"abc", TypeError, "single bytes"),
    ("single bytearray", lambda: bytearray(b"abc"), TypeError, "single bytearray"),
    ("single int", lambda: 5, TypeError, "not int"),
    ("None", lambda: None, TypeError, "NoneType"),
    ("float", lambda: 1.5, TypeError, "float"),
]


def bad_arrow():
    yield "float64", lambda: pa.array([1.0, 2.0]), TypeError, "double"
    yield "float32", lambda: pa.array([1.0], pa.float32()), TypeError, "float"
    yield "bool", lambda: pa.array([True]), TypeError, "bool"
    yield "string with null", lambda: pa.array(["a", None, "b"]), ValueError, "null"
    yield "int with null", lambda: pa.array([1, None]), ValueError, "null"
    yield "all null", lambda: pa.array([None, None]), ValueError, "null"
    yield "chunked, null in 2nd chunk", lambda: pa.chunked_array([["a"], ["b", None]]), ValueError, "null"
    yield "dictionary with null index", lambda: pa.array(["a", None, "a"]).dictionary_encode(), ValueError, "null"
    yield "sliced with null", lambda: pa.array([None, "a", "b"]).slice(0, 2), ValueError, "null"
    yield "timestamp", lambda: pa.array([1], pa.timestamp("s")), TypeError, "timestamp"
    yield "date32", lambda: pa.array([1], pa.date32()), TypeError, "date32"
    yield "decimal", lambda: pa.array([1], pa.decimal128(5, 0)), TypeError, "decimal"
    yield "list", lambda: pa.array([[1, 2]]), TypeError, "list"
    yield "struct", lambda: pa.array([{"a": 1}]), TypeError, "struct"
    yield "Table", lambda: pa.table({"a": [1, 2]}), TypeError, "Table.*column"
    yield "RecordBatch", lambda: pa.record_batch({"a": [1, 2]}), TypeError, "RecordBatch.*column"


def bad_pandas():
    yield "float Series", lambda: pd.Series([1.0, 2.0]), TypeError, "float"
    yield "float Series with NaN", lambda: pd.Series([1.0, np.nan]), TypeError, "float"
    yield "Float64 Series", lambda: pd.Series([1.0], dtype="Float64"), TypeError, "float"
    yield "Arrow float Series", lambda: pd.Series([1.0], dtype=pd.ArrowDtype(pa.float64())), TypeError, "float"
    yield "complex Series", lambda: pd.Series([1j]), TypeError, "complex"
    yield "bool Series", lambda: pd.Series([True, False]), TypeError, "bool"
    yield "boolean Series", lambda: pd.Series([True, False], dtype="boolean"), TypeError, "bool"
    yield "datetime Series", lambda: pd.Series(pd.to_datetime(["2020-01-01"])), TypeError, "datetime"
    yield "tz datetime Series", lambda: pd.Series(pd.to_datetime(["2020-01-01"]).tz_localize("UTC")), TypeError, "datetime"
    yield "timedelta Series", lambda: pd.Series(pd.to_timedelta([1], "s")), TypeError, "timedelta"
    yield "object Series with None", lambda: pd.Series(["a", None], dtype=object), ValueError, "missing"
    yield "object Series with NaN", lambda: pd.Series(["a", np.nan], dtype=object), ValueError, "missing"
    yield "str Series with NaN", lambda: pd.Series(["a", None]), ValueError, "missing"
    yield "string[pyarrow] with NA", lambda: pd.Series(["a", pd.NA], dtype="string[pyarrow]"), ValueError, "missing"
    yield "string[python] with NA", lambda: pd.Series(["a", pd.NA], dtype="string[python]"), ValueError, "missing"
    yield "Int64 with NA", lambda: pd.Series([1, pd.NA], dtype="Int64"), ValueError, "missing"
    yield "categorical with NaN", lambda: pd.Series(["a", None], dtype="category"), ValueError, "missing"
    yield "categorical floats", lambda: pd.Series([1.5, 2.5], dtype="category"), TypeError, "float"
    yield "object Series with float", lambda: pd.Series(["a", 1.5], dtype=object), TypeError, "float"
    yield "DataFrame", lambda: pd.DataFrame({"a": [1, 2]}), TypeError, "DataFrame.*column"
    yield "MultiIndex", lambda: pd.MultiIndex.from_tuples([(1, 2)]), TypeError, "MultiIndex"
    yield "float Index", lambda: pd.Index([1.5]), TypeError, "float"


BAD = BAD_NUMPY + BAD_PYTHON + list(bad_arrow()) + list(bad_pandas())


@pytest.mark.parametrize("name,make,exc,pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_clear_error_and_changes_nothing(name, make, exc, pattern):
    f = new_filter()
    f.add_many([1, 2, "a", b"b", 1])
    # a growable filter goes through other code paths; it must not change either
    g = cuckoo.Filter(8, fingerprint_bits=16, growable=True)
    g.add_many(range(40))
    assert len(g.stages) > 1
    for flt in (f, g):
        before = flt.copy()
        for method in ("add_many", "add_unique_many", "contains_many", "count_many", "discard_many", "update"):
            with pytest.raises(exc, match=re.compile(pattern, re.IGNORECASE | re.DOTALL)):
                getattr(flt, method)(make())
            assert flt == before, (name, method)
            assert len(flt) == len(before)
        with pytest.raises(exc):
            flt.update([7, 8], make())  # the good iterable before the bad one is not applied either
        assert flt == before


def test_bad_key_at_the_end_of_a_long_batch_changes_nothing():
    f = new_filter()
    f.add_many(range(10))
    before = f.copy()
    keys = list(range(100, 3100)) + [None]
    with pytest.raises(TypeError, match="None"):
        f.add_many(keys)
    with pytest.raises(TypeError, match="None"):
        f.add_unique_many(keys)
    with pytest.raises(TypeError, match="None"):
        f.discard_many(list(range(10)) + [None])
    assert f == before


def test_errors_of_the_iterable_itself_propagate():
    class FailingIter:
        def __iter__(self):
            raise RuntimeError("iter failed")

    class FailingHint:
        def __iter__(self):
            return self

        def __next__(self):
            raise StopIteration

        def __length_hint__(self):
            raise RuntimeError("hint failed")

    f = new_filter()
    f.add(1)
    before = f.copy()
    with pytest.raises(RuntimeError, match="iter failed"):
        f.add_many(FailingIter())
    with pytest.raises(RuntimeError, match="hint failed"):  # as list(FailingHint()) does
        f.add_many(FailingHint())
    with pytest.raises(TypeError, match="iterable"):
        f.add_many(object())
    assert f == before


def test_list_mutated_during_conversion_does_not_crash():
    victim: list = []

    class Evil:
        def __index__(self):
            victim.clear()  # frees the other elements of the list being converted
            return 3

    for filler in (lambda: "s" * 50, object):
        victim[:] = [Evil()] + [filler() for _ in range(100)]
        f = new_filter()
        # Like iterating the list in Python: the conversion sees the list as it is when it gets
        # to each position, so it stops where the list now ends, and never reads freed memory.
        assert f.add_many(victim) == 1
        assert 3 in f and len(f) == 1


@pytest.mark.skipif(sys.byteorder != "little", reason="checks the little-endian host path")
def test_native_and_swapped_orders_agree():
    vals = np.array([1, 2**40 + 3, 2**63 + 5], dtype="<u8")
    f = new_filter()
    f.add_many(vals)
    assert f.contains_many(vals.astype(">u8")).all()
    assert f.contains_many(vals.byteswap().view(">u8")).all()
