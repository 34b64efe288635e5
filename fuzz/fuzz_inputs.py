"""Coverage-guided fuzzing of the bulk-input converters (atheris).

    python fuzz/fuzz_inputs.py fuzz/corpus/inputs -max_total_time=60

The fuzzer picks a container (NumPy array of some dtype, list, tuple, generator, Arrow array or
chunked array) and its contents (ints of every width, bytes, str, floats, None, bools, nested
objects), then checks what DESIGN.md promises of the bulk calls:

* only TypeError, ValueError (FormatError included) or FilterFullError may escape;
* a rejected batch leaves the filter unchanged (same bytes);
* an accepted batch answers as the scalar path: contains_many(keys)[k] == (keys[k] in f), and
  add_unique_many(keys) equals add_unique applied key by key on a copy.
"""

from __future__ import annotations

import sys
from typing import Any, List

import atheris

import numpy as np

with atheris.instrument_imports(include=["cuckoo"]):
    import cuckoo
    import cuckoo._inputs  # noqa: F401

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - Arrow is optional
    pa = None

INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "<i8", ">i4", ">u8"]
OTHER_DTYPES = ["f4", "f8", "?", "c16", "M8[s]", "m8[s]", "V4"]
ALLOWED = (TypeError, ValueError, cuckoo.FilterFullError)


@atheris.instrument_func
def draw_scalar(fdp: Any) -> Any:
    kind = fdp.ConsumeIntInRange(0, 9)
    if kind <= 2:
        return fdp.ConsumeIntInRange(-(2**63), 2**64 - 1)
    if kind == 3:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 12))  # may fall outside 64 bits
    if kind == 4:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12))
    if kind == 5:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 8))
    if kind == 6:
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 4))  # may hold lone surrogates
    if kind == 7:
        return np.int64(fdp.ConsumeIntInRange(-(2**63), 2**63 - 1))
    return [None, 1.5, True, (1,), bytearray(b"ab"), memoryview(b"cd"), np.uint8(7)][fdp.ConsumeIntInRange(0, 6)]


@atheris.instrument_func
def draw_keys(fdp: Any) -> Any:
    n = fdp.ConsumeIntInRange(0, 40)
    kind = fdp.ConsumeIntInRange(0, 9)
    if kind <= 2:  # integer arrays, maybe strided or reversed
        dtype = np.dtype(INT_DTYPES[fdp.ConsumeIntInRange(0, len(INT_DTYPES) - 1)])
        raw = fdp.ConsumeBytes(n * dtype.itemsize)
        arr = np.frombuffer(raw[: len(raw) // dtype.itemsize * dtype.itemsize], dtype=dtype)
        step = [1, 2, -1, 3][fdp.ConsumeIntInRange(0, 3)]
        return arr[::step]
    if kind == 3:  # S / U arrays
        width = fdp.ConsumeIntInRange(1, 6)
        if fdp.ConsumeBool():
            return np.array([fdp.ConsumeBytes(width) for _ in range(n)], dtype=f"S{width}")
        return np.array([fdp.ConsumeUnicodeNoSurrogates(width) for _ in range(n)], dtype=f"U{width}")
    if kind == 4:  # other dtypes: must be refused (or, for bool, accepted as ints)
        dtype = OTHER_DTYPES[fdp.ConsumeIntInRange(0, len(OTHER_DTYPES) - 1)]
        return np.zeros(n, dtype=dtype)
    if kind == 5:
        return np.array([draw_scalar(fdp) for _ in range(n)], dtype=object)
    if kind == 6 and pa is not None:
        strs = [fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 5)) for _ in range(n)]
        typ = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()][fdp.ConsumeIntInRange(0, 3)]
        values: List[Any] = [s.encode() if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) else s for s in strs]
        if n and fdp.ConsumeIntInRange(0, 5) == 0:
            values[fdp.ConsumeIntInRange(0, n - 1)] = None
        arr = pa.array(values, type=typ)
        cut = fdp.ConsumeIntInRange(0, n)
        if fdp.ConsumeBool():
            return pa.chunked_array([arr[:cut], arr[cut:]], type=typ)
        return arr.slice(cut)
    if kind == 7 and pa is not None:
        ints = [fdp.ConsumeIntInRange(-(2**31), 2**31 - 1) for _ in range(n)]
        return pa.array(ints, type=[pa.int64(), pa.int32(), pa.uint8(), pa.int16()][fdp.ConsumeIntInRange(0, 3)] if all(0 <= i < 256 for i in ints) else pa.int64())
    keys = [draw_scalar(fdp) for _ in range(n)]
    return keys if fdp.ConsumeBool() else tuple(keys)


@atheris.instrument_func
def scalar_view(keys: Any) -> List[Any]:
    """The keys one by one, as the scalar API takes them."""
    if pa is not None and isinstance(keys, (pa.Array, pa.ChunkedArray)):
        return keys.to_pylist()
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
        return [int(k) for k in keys]
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "S":
        return [bytes(k) for k in keys]
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "U":
        return [str(k) for k in keys]
    return list(keys)


BASE = cuckoo.Filter(200, fingerprint_bits=16, seed=11)
BASE.update([0, 1, 2, b"", b"a", "a", "\u00e9", -1, 2**64 - 1])


@atheris.instrument_func
def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    keys = draw_keys(fdp)
    before = BASE.to_bytes()
    try:
        answers = BASE.contains_many(keys)
    except ALLOWED:
        assert BASE.to_bytes() == before
        return
    singles = scalar_view(keys)
    assert len(answers) == len(singles)
    assert answers.dtype == np.bool_
    for k, a in zip(singles, answers):
        assert (k in BASE) == bool(a), (k, a)
    # add_unique_many on a copy == add_unique key by key on another copy.
    bulk, single = BASE.copy(), BASE.copy()
    try:
        mask = bulk.add_unique_many(keys)
    except cuckoo.FilterFullError:
        return  # a tiny filter may fill: the keys before stay in (tested elsewhere)
    expected = [single.add_unique(k) for k in singles]
    assert list(mask) == expected
    assert bulk == single
    assert BASE.to_bytes() == before


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
