"""Turns columnar inputs (Arrow arrays, chunked arrays, pandas Series) into zero-copy parts the
compiled core can read without the GIL.

``batch_parts(obj)`` returns ``None`` for anything it does not recognise (the caller then iterates
the object as Python keys), else a list of parts, each either a NumPy array (integers, ``S``,
``U``) or a tuple ``(offsets, data)`` of NumPy views of an Arrow variable-width column.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np

Part = Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]


def _type_module(obj: Any) -> str:
    return type(obj).__module__ or ""


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
    if pa.types.is_dictionary(t):
        return _arrow_parts(arr.dictionary_decode())
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        _, offsets_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)
        offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        return [(offsets, data)]
    if pa.types.is_integer(t):
        return [arr.to_numpy(zero_copy_only=True)]
    if pa.types.is_string_view(t) if hasattr(pa.types, "is_string_view") else False:
        return _arrow_parts(arr.cast(pa.large_string()))
    raise TypeError(f"unsupported Arrow type {t}: keys must be integers, strings or binary")


def batch_parts(obj: Any) -> Optional[List[Part]]:
    module = _type_module(obj)
    if module.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(obj, (pa.Array, pa.ChunkedArray)):
            return _arrow_parts(obj)
        return None
    if module.startswith("pandas"):
        import pandas as pd

        if isinstance(obj, (pd.Series, pd.Index)):
            if obj.isna().any():
                raise ValueError(f"keys contain {int(obj.isna().sum())} missing value(s): nulls are not keys")
            values = obj.array
            arrow = getattr(values, "_pa_array", None)  # ArrowExtensionArray / ArrowStringArray
            if arrow is not None:
                return _arrow_parts(arrow)
            if obj.dtype.kind in "iu":
                return [obj.to_numpy()]
            if obj.dtype.kind == "f":
                raise TypeError(f"float column (dtype {obj.dtype}) is not a batch of keys: keys must be integers, bytes or str")
            return [np.asarray(obj.to_numpy(dtype=object))]
        return None
    return None
