"""Turns columnar inputs (Arrow arrays, chunked arrays, pandas Series and Index) into zero-copy
parts the compiled core can read without the GIL.

``batch_parts(obj)`` returns ``None`` for anything it does not recognise (the caller then iterates
the object as Python keys), else a list of parts, each either a NumPy array (integers, ``S``,
``U``, objects) or a tuple ``(offsets, data)`` of NumPy views of an Arrow variable-width column.
It raises TypeError for a column whose type is not a key type (floats, booleans, dates, ...) and
for containers that are not one column (DataFrame, Table), and ValueError for nulls: the caller
converts every part before changing anything, so the filter stays unchanged.

Other Arrow producers (Polars, DuckDB, nanoarrow, arro3, ...: anything with ``__arrow_c_stream__``
or ``__arrow_c_array__``) get ``None`` here and are read by the binding through the Arrow C data
interface (src/keys.cpp), without pyarrow, under the same rules for nulls and non-key types.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np

Part = Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]

_KEY_TYPES = "keys must be integers, strings or bytes"

# dtype.kind of NumPy / pandas dtypes that are never keys
_BAD_KINDS = {"f": "float", "c": "complex", "b": "boolean", "M": "datetime", "m": "timedelta"}


def _type_module(obj: Any) -> str:
    return type(obj).__module__ or ""


def _arrow_type_problem(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_floating(t):
        return f"float column (Arrow type {t})"
    if pa.types.is_boolean(t):
        return f"boolean column (Arrow type {t})"
    if pa.types.is_temporal(t):
        return f"date/time column (Arrow type {t})"
    return f"unsupported Arrow type {t}"


def _arrow_parts(arr: Any) -> List[Part]:
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        parts: List[Part] = []
        for chunk in arr.chunks:
            parts.extend(_arrow_parts(chunk))
        return parts
    if arr.null_count:
        raise ValueError(f"keys contain {arr.null_count} null value(s): nulls are not keys")
    t = arr.type
    if pa.types.is_null(t):  # no nulls counted: an empty array (pa.array([]) is of type null)
        return []
    if pa.types.is_dictionary(t):
        return _arrow_parts(arr.dictionary_decode())
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        _, offsets_buf, data_buf = arr.buffers()
        if offsets_buf is None:  # an empty array may come without buffers
            return [(np.zeros(len(arr) + 1, np.int64), np.zeros(0, np.uint8))]
        offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)
        offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        return [(offsets, data)]
    if pa.types.is_fixed_size_binary(t):
        # key k is data[(offset + k) * width, (offset + k + 1) * width): every byte, NULs included
        # (Arrow's element, unlike a NumPy 'S' item, has no padding)
        width = t.byte_width
        data_buf = arr.buffers()[1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        offsets = (np.arange(len(arr) + 1, dtype=np.int64) + arr.offset) * width
        return [(offsets, data)]
    if pa.types.is_integer(t):
        return [arr.to_numpy(zero_copy_only=True)]
    # view layouts (Arrow >= 16) store short strings inline: cast to the offsets layout (a copy)
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return _arrow_parts(arr.cast(pa.large_string()))
    if getattr(pa.types, "is_binary_view", lambda _: False)(t):
        return _arrow_parts(arr.cast(pa.large_binary()))
    raise TypeError(f"{_arrow_type_problem(t)} is not a batch of keys: {_KEY_TYPES}")


def _pandas_parts(obj: Any) -> Optional[List[Part]]:
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        raise TypeError("a pandas DataFrame is not a batch of keys: pass one column, e.g. df['name']")
    if isinstance(obj, pd.MultiIndex):
        raise TypeError(
            "a pandas MultiIndex is not a batch of keys (its entries are tuples): pass one level, "
            "e.g. index.get_level_values(0)"
        )
    if not isinstance(obj, (pd.Series, pd.Index)):
        return None
    dtype = obj.dtype
    what = "column"
    if isinstance(dtype, pd.CategoricalDtype):  # keyed by value: checked on its categories
        what = "categorical column with categories of"
        dtype = dtype.categories.dtype
    problem = _BAD_KINDS.get(getattr(dtype, "kind", "O"))
    if problem:
        raise TypeError(f"{problem} {what} (dtype {dtype}) is not a batch of keys: {_KEY_TYPES}")
    missing = int(obj.isna().sum())
    if missing:
        raise ValueError(f"keys contain {missing} missing value(s) (None/NaN/NA): missing values are not keys")
    values = obj.array
    arrow = getattr(values, "_pa_array", None)  # ArrowExtensionArray / ArrowStringArray
    if arrow is not None:
        return _arrow_parts(arrow)
    if obj.dtype.kind in "iu":  # NumPy-backed or nullable integers (no NA left)
        return [obj.to_numpy(dtype=obj.dtype.numpy_dtype if hasattr(obj.dtype, "numpy_dtype") else None)]
    return [np.asarray(obj.to_numpy(dtype=object))]


def batch_parts(obj: Any) -> Optional[List[Part]]:
    module = _type_module(obj)
    if module.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(obj, (pa.Array, pa.ChunkedArray)):
            return _arrow_parts(obj)
        if isinstance(obj, (pa.Table, pa.RecordBatch)):
            raise TypeError(
                f"a pyarrow {type(obj).__name__} is not a batch of keys: pass one column, e.g. table['name']"
            )
        return None
    if module.startswith("pandas"):
        return _pandas_parts(obj)
    return None
