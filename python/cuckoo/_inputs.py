"""The input adapter that the package hands to the compiled core when it loads
(``_core._set_input_adapter(batch_parts)`` in ``__init__.py``): the core never imports this module.

``batch_parts(obj)`` is called for a bulk input that is neither a list, a tuple nor a buffer. It
returns ``None`` for anything it does not recognise (the core then reads the object as an Arrow
producer through ``__arrow_c_stream__`` / ``__arrow_c_array__``, or iterates it as Python keys),
else a list of parts, each a NumPy array (integers, ``S``, ``U``, objects), an Arrow producer, or
a tuple ``(offsets, data)`` of NumPy views of an Arrow variable-width column.

pyarrow arrays are handed back whole: the core reads them through ``__arrow_c_stream__``, without
pyarrow, under the one set of Arrow rules for nulls and non-key types (src/keys_arrow.cpp). This
module only refuses the pyarrow containers that are not one column (tables, record batches,
struct arrays), and turns pandas Series and Index objects into parts. It raises TypeError for a
column whose type is not a key type and for containers that are not one column, and ValueError for
missing values: the caller converts every part before changing anything, so the filter stays
unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union

from ._numpy import np

# A NumPy array, an (offsets, data) pair of NumPy arrays, or an Arrow producer (a pyarrow array).
# For the type checker only: NumPy is imported on first use (cuckoo._numpy), and the alias spelled
# with strings cost 3 ms of `import cuckoo` (typing compiles them; a process's first compile()).
if TYPE_CHECKING:
    import numpy

    Part = Union[numpy.ndarray, Tuple[numpy.ndarray, numpy.ndarray], Any]
else:
    Part = Any

_KEY_TYPES = "keys must be integers, strings or bytes"

# dtype.kind of NumPy / pandas dtypes that are never keys
_BAD_KINDS = {"f": "float", "c": "complex", "b": "boolean", "M": "datetime", "m": "timedelta"}


def _type_module(obj: Any) -> str:
    return type(obj).__module__ or ""


def _arrow_parts(arr: Any) -> List[Part]:
    # The core reads an Arrow column itself (its __arrow_c_stream__): zero copy for integers and
    # offset-based strings, with the Arrow rules for nulls and types in one place.
    return [arr]


def _refuse_pyarrow_container(obj: Any) -> None:
    import pyarrow as pa

    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        raise TypeError(
            f"a pyarrow {type(obj).__name__} is not a batch of keys: pass one column, e.g. table['name']"
        )
    # A struct column exports the same Arrow schema as a record batch, which the core reads as
    # its one column; a pyarrow struct array is refused as the pyarrow table is.
    if isinstance(obj, (pa.Array, pa.ChunkedArray)) and pa.types.is_struct(obj.type):
        raise TypeError(f"unsupported Arrow type {obj.type} is not a batch of keys: {_KEY_TYPES}")


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

        _refuse_pyarrow_container(obj)
        if isinstance(obj, (pa.Array, pa.ChunkedArray)):
            return _arrow_parts(obj)
        return None
    if module.startswith("pandas"):
        return _pandas_parts(obj)
    return None
