"""Cuckoo filters over Dask collections: build, membership and deduplication on a cluster.

Needs the optional extra ``dask`` (``pip install ".[dask]"`` from a clone, or
``pip install "dask[dataframe,distributed]"``). Every function takes a Dask
DataFrame (with ``column``), a Dask Series, or a one-dimensional Dask Array of integers, bytes or
strings, and works with any Dask scheduler; on a ``dask.distributed`` cluster the work runs on the
workers. The design and its trade-offs are described in docs/distributed.md.

- :func:`build` builds one filter per partition on the workers, all sized for the whole collection
  (so they merge exactly), and tree-reduces them: with set semantics by default (each distinct key
  once, merged with the set union ``|``), so the result equals (``==``) a filter built locally with
  ``Filter(len(keys), ...).add_unique_many(keys)``; with ``multiset=True`` every row is a copy
  (``add_many``, merged with ``+``).
- :func:`contains` (alias :func:`isin`) is a lazy boolean Series/Array; the filter is shipped to
  the workers once (scattered and broadcast on a distributed client, else one graph key).
- :func:`dedup` drops every row whose key appeared earlier (in partition order, then row order)
  exactly by default (no first occurrence is ever dropped): keys (not rows) are hashed to shards,
  one exact in-memory key set per shard decides in parallel, and the rows stay in their
  partitions. Asked for the filter (``exact=False``, ``fpr=``, ``capacity=``, ...), it makes one
  sequential pass that carries a filter from partition to partition; only the filter and one
  partition's keys are in a step's memory.
"""

from __future__ import annotations

import math
import os
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

try:
    import dask
    import dask.array as da
    import dask.sizeof
    import dask.dataframe as dd
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "cuckoo.dask needs Dask: pip install 'dask[dataframe,distributed]' (or, from a clone of cuckoo, pip install '.[dask]')"
    ) from exc

from ._core import Filter, FilterFullError, _first_occurrences
from ._grow import growable_version

__all__ = ["build", "contains", "isin", "dedup"]

_DEFAULT_SPLIT_EVERY = 8


@dask.sizeof.sizeof.register(Filter)
def _sizeof_filter(f: Filter) -> int:
    # The scheduler places tasks by the bytes of their inputs. Without this it would take a filter
    # for a small Python object and move the (much larger) table to each partition's keys, rather
    # than the keys to the filter: in dedup's chain that bounced the filter between workers.
    return int(f.nbytes) + 64


# ---- inputs ----


def _check_key_dtype(dtype: Any, what: str) -> None:
    kind = getattr(dtype, "kind", None)
    if kind == "f" or kind == "c" or kind == "b" or kind in ("m", "M"):
        raise TypeError(f"{what} has dtype {dtype}: keys must be integers, bytes or str")


def _keys(collection: Any, column: Optional[str]) -> Any:
    """The key column of ``collection`` as a Dask Series or a 1-d Dask Array."""
    if isinstance(collection, dd.DataFrame):
        if column is None:
            if len(collection.columns) != 1:
                raise ValueError(
                    f"the DataFrame has {len(collection.columns)} columns: say which holds the keys with column=..."
                )
            column = collection.columns[0]
        if column not in collection.columns:
            raise KeyError(f"column {column!r} is not in the DataFrame (columns: {list(collection.columns)})")
        keys = collection[column]
        _check_key_dtype(keys.dtype, f"column {column!r}")
        return keys
    if isinstance(collection, dd.Series):
        if column is not None:
            raise ValueError("column=... is for DataFrames; this is a Series")
        _check_key_dtype(collection.dtype, "the Series")
        return collection
    if isinstance(collection, da.Array):
        if column is not None:
            raise ValueError("column=... is for DataFrames; this is an Array")
        if collection.ndim != 1:
            raise ValueError(f"the Array has {collection.ndim} dimensions: keys must be a 1-d Array (use .ravel())")
        _check_key_dtype(collection.dtype, "the Array")
        return collection
    raise TypeError(
        f"expected a Dask DataFrame, Series or Array, not {type(collection).__module__}.{type(collection).__qualname__}"
    )


def _partitions(collection: Any) -> List[Any]:
    """One Delayed per partition (Series/DataFrame) or chunk (1-d Array), in order."""
    if isinstance(collection, da.Array):
        return list(collection.to_delayed().ravel())
    return list(collection.to_delayed())


def _column(part: Any, column: Optional[str]) -> Any:
    if column is None and hasattr(part, "columns"):
        column = part.columns[0]
    return part if column is None else part[column]


def _total_length(collection: Any) -> int:
    """The number of rows: from the chunk sizes when known, else one cheap pass of ``len``."""
    if isinstance(collection, da.Array) and not any(math.isnan(c) for c in collection.chunks[0]):
        return int(sum(collection.chunks[0]))
    lengths = dask.compute(*[dask.delayed(len, pure=True)(p) for p in _partitions(collection)])
    return int(sum(lengths))


def _filter_params(total: int, capacity: Optional[int], fpr: Optional[float], seed: Any, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if "growable" in kwargs and kwargs["growable"]:
        raise ValueError(
            "growable=True is not supported here: partition filters must share one capacity to merge exactly"
        )
    if seed is None or (isinstance(seed, str) and seed == "random"):
        # A secret seed, drawn once here: every partition filter must share it to merge exactly.
        seed = int.from_bytes(os.urandom(8), "big")
    params = dict(kwargs)
    params.update(capacity=max(int(total), 1) if capacity is None else capacity, fpr=fpr, seed=seed)
    # Check the parameters on the client, cheaply (capacity 1), so mistakes raise here, not on a worker.
    probe = dict(params, capacity=1)
    Filter(**probe)
    if not isinstance(params["capacity"], int) or isinstance(params["capacity"], bool):
        raise TypeError(f"capacity must be an int, not {type(params['capacity']).__name__}")
    if params["capacity"] <= 0:
        raise ValueError(f"capacity must be positive, got {params['capacity']}")
    return params


# ---- build ----


# Copies of one key share its two buckets, so a filter of repeated keys fills far below its
# design load (b = 4: about 81% for keys stored twice, 72% three times): a multiset build sized by
# the row count would fail. Where a multiset filter finds no room, it continues as a growable
# filter (its table the first stage), so every row still gets its copy; more than 2b copies of
# one key ("copies") still fail, since growth cannot help them.


def _no_room(exc: FilterFullError) -> bool:
    return getattr(exc, "reason", None) in ("no_room", "full")  # "full": a merge overflowed


def _partition_filter(part: Any, column: Optional[str], params: Dict[str, Any], multiset: bool) -> Filter:
    f = Filter(**params)
    keys = _column(part, column)
    if len(keys):
        if multiset:
            try:
                f.add_many(keys)
            except FilterFullError as exc:
                if not _no_room(exc):
                    raise
                f = Filter(**params, growable=True)
                f.add_many(keys)
        else:
            f.add_unique_many(keys)
    return f


def _merge_all(filters: Sequence[Filter], multiset: bool) -> Filter:
    # Merge into a copy: a task must not change its inputs (they may be shared or recomputed).
    out = filters[0].copy()
    for g in filters[1:]:
        if multiset:
            try:
                out += g  # counts add
            except FilterFullError as exc:
                grown = growable_version(out) if _no_room(exc) else None
                if grown is None:
                    raise
                out = grown
                out += g  # a growable filter keeps g's stage as one of its own if it does not fit
        else:
            out |= g  # the larger count of each fingerprint: each distinct key stays once
    return out


def build(
    collection: Any,
    column: Optional[str] = None,
    fpr: Optional[float] = None,
    capacity: Optional[int] = None,
    seed: Any = 0,
    *,
    multiset: bool = False,
    split_every: int = _DEFAULT_SPLIT_EVERY,
    **filter_kwargs: Any,
) -> Filter:
    """Build one filter holding every distinct key of ``collection`` (set semantics, like
    ``add_unique_many``), or with ``multiset=True`` every row as a copy (like ``add_many``).

    Each partition's keys go into a filter on a worker; the partition filters are merged in a
    tree (``split_every`` at a time) and the result is returned. Every partition filter has the
    same capacity, seed, bucket size and fingerprint width, so the merges are exact: the result
    equals ``Filter(capacity, fpr, seed=seed, ...)`` after ``add_unique_many`` of all the keys
    (set union ``|`` of the partitions: a key in many rows and partitions is stored once), or with
    ``multiset=True`` after ``add_many`` (counts add, ``+``; a key repeated more than
    ``2 * bucket_size`` times then does not fit: ``FilterFullError``). Repeated keys fill a
    filter early (three copies each: at ~72% load); where a multiset build finds no room it
    continues in a growable filter (every row still a copy, counts exact; see docs/distributed.md).
    ``capacity`` defaults to the number of rows (counted with one pass over the partitions when
    the Array chunk sizes are unknown or for DataFrames): give a bound on the distinct keys to
    save memory when keys repeat. ``seed=None`` or ``"random"`` draws a secret seed once (for
    keys an adversary may choose; read it back from ``.seed``); ``filter_kwargs`` go to ``Filter``
    (``fingerprint_bits``, ``bucket_size``, ``max_kicks``).
    """
    if not isinstance(multiset, bool):
        raise TypeError(f"multiset must be a bool, not {type(multiset).__name__}")
    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an int >= 2, got {split_every!r}")
    keys = _keys(collection, column)
    total = _total_length(keys) if capacity is None else 0
    params = _filter_params(total, capacity, fpr, seed, filter_kwargs)
    level = [dask.delayed(_partition_filter, pure=True)(p, None, params, multiset) for p in _partitions(keys)]
    while len(level) > 1:
        level = [
            dask.delayed(_merge_all, pure=True)(level[i : i + split_every], multiset)
            for i in range(0, len(level), split_every)
        ]
    if not level:  # pragma: no cover - Dask collections have at least one partition
        return Filter(**params)
    return level[0].compute()


# ---- membership ----


def _active_client() -> Any:
    """The distributed client that will run the graph, or None (no client, or another scheduler
    chosen with ``dask.config.set(scheduler=...)``)."""
    scheduler = dask.config.get("scheduler", None)
    if isinstance(scheduler, str) and scheduler not in ("dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - dask without distributed
        return None
    try:
        return default_client()
    except ValueError:
        return None


def _ship(filt: Filter) -> Any:
    """The filter as one graph dependency: a broadcast future on a distributed client, else a
    single Delayed key. Either way each task receives the same object; it is sent once per worker."""
    client = _active_client()
    if client is not None:
        return client.scatter(filt, broadcast=True, hash=False)
    return dask.delayed(filt, name=f"cuckoo-filter-{uuid.uuid4().hex}")


def _contains_series(part: Any, filt: Filter) -> Any:
    import pandas as pd

    return pd.Series(filt.contains_many(part) if len(part) else np.zeros(0, bool), index=part.index, name=part.name)


def _contains_block(block: np.ndarray, filt: Filter) -> np.ndarray:
    return filt.contains_many(block) if len(block) else np.zeros(0, bool)


def contains(collection: Any, filt: Filter, column: Optional[str] = None) -> Any:
    """A lazy boolean Dask Series (for a DataFrame/Series) or Array: True where the key may be in
    ``filt`` (false positives at the filter's rate, never false negatives).

    The filter travels once: with a ``dask.distributed`` client it is scattered to every worker
    (``broadcast=True``) and all tasks share that copy; otherwise it is one key of the graph.
    """
    if not isinstance(filt, Filter):
        raise TypeError(f"filt must be a cuckoo.Filter, not {type(filt).__name__}")
    keys = _keys(collection, column)
    shipped = _ship(filt)
    if isinstance(keys, da.Array):
        return keys.map_blocks(_contains_block, shipped, dtype=bool)
    import pandas as pd

    return keys.map_partitions(_contains_series, shipped, meta=pd.Series([], dtype=bool, name=keys.name))


isin = contains


# ---- deduplication ----


def _new_filter(params: Dict[str, Any]) -> Filter:
    return Filter(**params)


def _dedup_step(state: Filter, keys: Any) -> Tuple[Filter, np.ndarray]:
    # A pure task: copy the incoming filter (a memcpy of the table, small next to hashing the keys)
    # instead of changing it, so a retried or recomputed step sees the state it was given.
    f = state.copy()
    mask = f.add_unique_many(keys) if len(keys) else np.zeros(0, bool)
    return f, np.asarray(mask, dtype=bool)


def _keys_of(part: Any, column: Optional[str]) -> Any:
    return _column(part, column)


def _apply_mask(part: Any, mask: np.ndarray) -> Any:
    if len(mask) != len(part):  # pragma: no cover - a partition that changed between passes
        raise RuntimeError("a partition changed length between the key pass and the row pass")
    return part[mask]


# Exact dedup (exact=True): three stages, each in parallel.
#  1. per partition: the first row of each key within the partition (the only rows that can be
#     first overall), each one's shard (a hash of its key, the same on every worker), and per
#     shard the row positions and keys of those rows, in row order;
#  2. per shard: one exact key set (_core._first_occurrences: cuckoo/key_set.hpp, the exact set
#     of `cuckoo dedup`) takes the shard's pieces in partition order, so its "was new" mask keeps
#     exactly the first row of each key (every row of a key goes to the one shard);
#     returns, per partition, the rows it keeps as a packed bit mask;
#  3. per partition: the OR of those masks over the shards selects its rows.
# Only keys and positions cross between workers; a shard's set holds its index and its keys in
# memory for the task's length.


def _key_series(part: Any, column: Any) -> Any:
    """The key column of a partition (or an Array chunk) as a pandas Series with a RangeIndex; for
    a list of columns, those columns as a DataFrame."""
    import pandas as pd

    if isinstance(column, list):
        return part[column].reset_index(drop=True)
    keys = _column(part, column)
    if isinstance(keys, pd.Series):
        return keys.reset_index(drop=True)
    return pd.Series(np.asarray(keys), copy=False)


def _row_keys(frame: Any) -> Any:
    """One Arrow binary key per row of several key columns: each integer field as its 8 bytes
    (little-endian), each string or bytes field as its 4-byte length then its bytes. Fixed-width
    or length-prefixed fields in a fixed column order make the encoding injective, so two rows
    get the same key only when every field is equal (no missing values here: they go apart)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(frame)
    fields = []
    for name in frame.columns:
        col = frame[name]
        if col.dtype.kind in "iu":
            words = np.ascontiguousarray(col.to_numpy(dtype=np.int64 if col.dtype.kind == "i" else np.uint64),
                                         dtype="<i8" if col.dtype.kind == "i" else "<u8")
            fields.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), n, [None, pa.py_buffer(words)]))
            continue
        # An object column is tagged bytes by now (_object_keys), possibly none of them.
        arr = pa.array(col.tolist(), pa.large_binary()) if col.dtype == object else pa.array(col, from_pandas=True)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
            arr = arr.cast(pa.large_string()).cast(pa.large_binary())
        elif pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
            arr = arr.cast(pa.large_binary())
        else:
            raise TypeError(f"key column {name!r} holds {arr.type}: keys must be integers, bytes or str")
        lengths = np.ascontiguousarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), dtype="<u4")
        fields.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(4), n, [None, pa.py_buffer(lengths)]))
        fields.append(arr)
    fields = [f.cast(pa.large_binary()) for f in fields]
    return pc.binary_join_element_wise(*fields, pa.scalar(b"", pa.large_binary())) if len(fields) > 1 else fields[0]


def _tagged(values: Any) -> List[bytes]:
    """Object keys as bytes that are equal exactly when pandas counts the keys equal: a type tag,
    then a str's UTF-8 (lone surrogates kept, as pandas keeps them), a bytes value as it is, an
    int's decimal digits (True and 1 are one key to pandas, as are False and 0). Without the tag
    the key set took b"a" for "a" (a str is hashed as its UTF-8) and -1 for 2**64 - 1 (an int by
    its 64-bit value), which pandas keeps apart; without surrogatepass a lone surrogate raised
    UnicodeEncodeError."""
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(b"s" + v.encode("utf-8", "surrogatepass"))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out.append(b"b" + bytes(v))
        elif isinstance(v, (int, np.integer)):
            out.append(b"i" + str(int(v)).encode())
        else:
            raise TypeError(f"a key of type {type(v).__name__} ({v!r}): keys must be integers, bytes or str")
    return out


def _object_keys(keys: Any) -> Any:
    """An object-dtype key Series (no missing values) as a Series of tagged bytes (_tagged), also
    before it is hashed to a shard (pandas' hash encodes str as UTF-8: a lone surrogate raised);
    other key Series as they are."""
    import pandas as pd

    if isinstance(keys, pd.DataFrame):  # several key columns: each object column alike
        objects = [c for c in keys.columns if keys[c].dtype == object]
        return keys.assign(**{c: _object_keys(keys[c]) for c in objects}) if objects else keys
    if keys.dtype == object:
        return pd.Series(_tagged(keys.tolist()), dtype=object, index=keys.index)
    return keys


def _store_keys(keys: Any) -> Any:
    # What the key set reads fastest: a NumPy array for integer columns, else the Series itself (the
    # package's input adapter reads Arrow-backed strings through their buffers). Never a pandas
    # ExtensionArray (``Series.array``): the core would iterate it key by key as Python objects,
    # which made the shards 10x slower than the partitions' own drop_duplicates.
    if not hasattr(keys, "dtype"):  # several key columns: one binary key per row
        return _row_keys(keys)
    if isinstance(keys.dtype, np.dtype) and keys.dtype.kind in "iu":
        return keys.to_numpy()
    return keys


def _shard_of(keys: Any, shards: int) -> np.ndarray:
    import pandas as pd

    # pandas' hash of values (SipHash with a fixed key): the same key gives the same shard in
    # every process, which is what sends every row of a key to one shard. Integers are hashed as
    # a NumPy array (vectorised, ~5 ns a key), everything else through hash_pandas_object.
    if shards == 1:
        return np.zeros(len(keys), np.uint8)
    if isinstance(getattr(keys, "dtype", None), np.dtype) and keys.dtype.kind in "iu":
        h = pd.util.hash_array(keys.to_numpy())
    else:
        h = pd.util.hash_pandas_object(keys, index=False).to_numpy()
    # A narrow type: NumPy's stable sort of 1- and 2-byte integers is a radix sort (linear).
    return (h % np.uint64(shards)).astype(np.uint8 if shards <= 256 else np.uint16 if shards <= 65536 else np.intp)


_NO_NULLS: Tuple[np.ndarray, Any] = (np.zeros(0, np.int64), None)


def _split_by_shard(part: Any, column: Optional[str], shards: int, keep: str = "first") -> List[Any]:
    """Per shard, ``(rows, (positions, keys), (null positions, null keys))``: the partition's row
    count and the positions and keys of its first (`keep` "last": last) row of each of its keys,
    in row order; the missing keys (None, NaN, NA) go apart, to shard 0 only."""
    keys = _key_series(part, column)
    rows = len(keys)
    if rows == 0:
        return [(0, (np.zeros(0, np.int64), keys), _NO_NULLS)] * shards
    # Only a key's first row in its partition can be its first row overall: the other rows are
    # dropped here, and only the candidates go to the shards (a combiner, as drop_duplicates does
    # per chunk). With keys that repeat, that is a small part of the rows.
    # Positions as int32 where they fit: 12 bytes a candidate to ship instead of 16 (int keys).
    candidates = np.flatnonzero(~keys.duplicated(keep=keep).to_numpy()).astype(np.int32 if rows < 2**31 else np.int64)
    cand = keys.take(candidates).reset_index(drop=True)
    nulls = _NO_NULLS
    missing = cand.isna().to_numpy()
    if missing.ndim == 2:  # several key columns: a row with any missing field
        missing = missing.any(axis=1)
    if missing.any():
        # The key set takes no missing values; pandas counts them as keys (NA equal to NA, and in an
        # object column None apart from NaN). Shard 0 decides them with pandas itself.
        nulls = (candidates[missing], cand[missing].reset_index(drop=True))
        candidates, cand = candidates[~missing], cand[~missing].reset_index(drop=True)
    cand = _object_keys(cand)  # (pandas' duplicated() above already compared them as pandas does)
    shard = _shard_of(cand, shards)
    order = np.argsort(shard, kind="stable")  # row order within each shard
    ends = np.cumsum(np.bincount(shard, minlength=shards))
    out = []
    for s, (lo, hi) in enumerate(zip(np.concatenate([[0], ends[:-1]]), ends)):
        idx = order[lo:hi]
        piece = (candidates[idx], _store_keys(cand.take(idx).reset_index(drop=True)))
        out.append((rows, piece, nulls if s == 0 else _NO_NULLS))
    return out


def _shard_dedup(shard: int, keep: str, *splits: List[Any]) -> List[np.ndarray]:
    """Per partition, the rows this shard keeps as a packed bit mask (``np.packbits``): N/8 bytes
    for N rows, whatever the number of keys, so that every partition can take every shard's
    answer whole (one task per partition, no per-(shard, partition) pieces in the graph).
    `keep` "last": the last row of each key (the first in reverse (partition, row) order)."""
    import pandas as pd

    # A pure task: a new key set each time, so a retried or recomputed shard gives the same
    # answer. The set holds the keys in memory (about 17 bytes an 8-byte key), which an anonymous
    # Store did in a temporary file read back on every tag match: with 5 * 10^6 distinct int keys
    # the shards took 1.3x the time of Dask's drop_duplicates that way (benchmarks/dask_dedup.py).
    masks = []
    null_pos: List[np.ndarray] = []
    null_keys = []
    pieces = []
    for split in splits:  # partition order
        rows, (pos, keys), (npos, nkeys) = split[shard]
        pieces.append(keys)
        null_pos.append(npos)
        if nkeys is not None:
            null_keys.append(nkeys)
    # Any seed gives the same answer (the set is exact); a random one keeps crafted keys from
    # piling into its stash.
    if keep == "last":  # (the key set keeps the first it sees: it sees the rows from the end)
        backwards = [p.take(np.arange(len(p) - 1, -1, -1)) for p in reversed(pieces)]  # (NumPy, pandas, Arrow)
        first = _first_occurrences(backwards, int.from_bytes(os.urandom(8), "big"))
        first = [f[::-1] for f in reversed(first)]
    else:
        first = _first_occurrences(pieces, int.from_bytes(os.urandom(8), "big"))
    for split, is_first in zip(splits, first):
        rows, (pos, _), _ = split[shard]
        mask = np.zeros(rows, dtype=bool)
        if len(pos):
            mask[pos[is_first]] = True
        masks.append(mask)
    if null_keys:
        # The first (last) row of each missing-value key, by pandas' own rule, in (partition, row) order.
        first = ~pd.concat(null_keys, ignore_index=True).duplicated(keep=keep).to_numpy()
        at = np.cumsum([0] + [len(p) for p in null_pos])
        for i, p in enumerate(null_pos):
            masks[i][p[first[at[i]:at[i + 1]]]] = True
    return [np.packbits(m) for m in masks]


def _keep_rows(part: Any, index: int, *decided: List[np.ndarray]) -> Any:
    mask = np.zeros(len(part), dtype=bool)
    for packed in decided:
        mask |= np.unpackbits(packed[index], count=len(part)).view(bool)
    return part[mask]


def _worker_addresses() -> List[str]:
    """The workers of the active distributed client, sorted (none without one)."""
    client = _active_client()
    if client is None:
        return []
    try:
        return sorted(client.scheduler_info().get("workers", {}))
    except Exception:  # pragma: no cover - a client that cannot say
        return []


def _default_shards(partitions: int) -> int:
    """Two shards per worker of the active distributed client (4 without one), at most one per
    partition: enough to keep every worker busy; each more is one more task that reads every
    partition's split (measured with the earlier graph of partitions x shards pieces, 10^7 rows,
    16 partitions: 16 shards 1.57 s, 4 shards 1.14 s, 2 shards 1.30 s, benchmarks/dask_dedup.py)."""
    client = _active_client()
    workers = 2
    if client is not None:
        try:
            workers = max(1, len(client.scheduler_info().get("workers", {})))
        except Exception:  # pragma: no cover - a client that cannot say
            pass
    return max(1, min(partitions, 2 * workers))


def _dedup_exact(collection: Any, column: Optional[str], shards: Optional[int], keep: str = "first") -> Any:
    parts = _partitions(collection)
    if shards is None:
        shards = _default_shards(len(parts))
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be an int >= 1, got {shards!r}")
    token = uuid.uuid4().hex
    # Three task layers and nothing else: every shard takes every partition's split whole, and
    # every partition every shard's bit masks, instead of a getitem task per (partition, shard)
    # pair each way (16 partitions, 4 shards: 128 tasks more than the 36 here). On a 2-worker
    # cluster the scheduler's cost per task, not the hashing, was most of the time.
    split = [
        dask.delayed(_split_by_shard, pure=True)(part, column, shards, keep,
                                                 dask_key_name=f"cuckoo-dedup-split-{i}-{token}")
        for i, part in enumerate(parts)
    ]
    # Each shard reads every split, so the scheduler sees no data to place it by and put all of
    # them on one worker (10^7 rows, 5 * 10^6 distinct keys: one worker busy, the other idle, and
    # slower than drop_duplicates). On a distributed client they are spread over the workers in
    # turn (a preference: allow_other_workers).
    workers = _worker_addresses()
    decided = []
    for s in range(shards):
        with dask.annotate(**({"workers": [workers[s % len(workers)]], "allow_other_workers": True} if workers else {})):
            decided.append(dask.delayed(_shard_dedup, pure=True)(s, keep, *split,
                                                                 dask_key_name=f"cuckoo-dedup-shard-{s}-{token}"))
    kept = [
        dask.delayed(_keep_rows, pure=True)(part, i, *decided, dask_key_name=f"cuckoo-dedup-keep-{i}-{token}")
        for i, part in enumerate(parts)
    ]
    if isinstance(collection, da.Array):
        return da.concatenate([da.from_delayed(k, shape=(math.nan,), dtype=collection.dtype) for k in kept])
    return dd.from_delayed(kept, meta=collection._meta, divisions=collection.divisions, verify_meta=False)


def dedup(
    collection: Any,
    column: Optional[str] = None,
    fpr: Optional[float] = None,
    capacity: Optional[int] = None,
    seed: Any = None,
    *,
    exact: Optional[bool] = None,
    shards: Optional[int] = None,
    keep: str = "first",
    **filter_kwargs: Any,
) -> Any:
    """Drop every row whose key appeared earlier, in partition order (then row order): a lazy
    collection of the same kind with the first occurrence of each key.

    **Exact by default**, as ``cuckoo dedup`` and ``cuckoo.dedup()``: no first occurrence is ever
    dropped (see ``exact=True`` below). The filter is used only when asked for: ``exact=False``,
    or any of ``fpr``, ``capacity``, ``seed`` or a filter argument (``fingerprint_bits=...``).

    With the filter: one filter is carried through the partitions in order by a chain of tasks: step ``i`` copies
    the filter left by step ``i - 1``, inserts partition ``i``'s keys with ``add_unique_many`` and
    returns the "was new" mask; the rows are then filtered where the partition lives, in parallel.
    A step holds one filter and one partition's keys; the rows themselves never move. A first
    occurrence is dropped by mistake only when its fingerprint collides with an earlier key's
    (about ``fpr`` per distinct key); a repeated key is always dropped. The mask is exactly that of
    ``Filter(capacity, fpr, seed=seed).add_unique_many(all_keys)`` on one machine.

    ``capacity`` defaults to the number of rows (one pass of ``len`` over the partitions unless
    an Array's chunk sizes are known); give it to skip that pass when you know a bound on the
    number of distinct keys.

    ``exact=True`` (the default): no first occurrence is ever dropped, and the result equals pandas'
    ``drop_duplicates(subset=column, keep="first")`` of the computed frame, missing keys (None,
    NaN, NA) counted as pandas counts them, and keys pandas keeps apart kept apart (``b"a"`` and
    ``"a"``, ``-1`` and ``2**64 - 1`` in an object column); ``column`` may then be a list of
    columns (integer, str or bytes). Each partition sends
    the key and row position of the first row of each of its keys to ``shards`` shards by a hash
    of the key (default: two per worker of the active distributed client, or 4, at most one per
    partition); each shard runs one exact in-memory key set over its keys in
    (partition, row) order, in parallel with the others; each partition then keeps the rows its
    shards found new. Keys cross between workers, rows never do. ``fpr``, ``capacity``, ``seed``
    and filter arguments are for the filter path and are refused here.

    ``keep="last"`` (exact only): each key's last row instead of its first, in partition and row
    order: pandas' ``drop_duplicates(subset=column, keep="last")``, and the records
    ``cuckoo dedup --keep last`` writes. Each partition sends its last row of each key; each shard
    reads its pieces from the last partition back.
    """
    if keep not in ("first", "last"):
        raise ValueError(f"keep must be 'first' or 'last', not {keep!r}")
    if exact is not None and not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool, not {type(exact).__name__}")
    filter_asked = fpr is not None or capacity is not None or seed is not None or bool(filter_kwargs)
    if exact is None:
        exact = not filter_asked
    if isinstance(column, (list, tuple)):
        # Several key columns (as pandas' subset=[...]): each checked like one key column.
        if not exact:
            raise ValueError("several key columns need exact=True (the filter path keys one column)")
        if not isinstance(collection, dd.DataFrame):
            raise ValueError("a list of key columns is for DataFrames")
        if not column:
            raise ValueError("column=[] names no key column")
        for c in column:
            _keys(collection, c)
        column = list(column)
    else:
        keys = _keys(collection, column)
        if isinstance(collection, dd.DataFrame) and column is None:
            column = collection.columns[0]
    if exact:
        if filter_asked:
            raise ValueError("exact=True uses an exact key set per shard: fpr, capacity, seed and filter arguments do not apply")
        return _dedup_exact(collection, column, shards, keep)
    if keep != "first":
        raise ValueError("keep='last' needs exact=True (a filter only knows what it has seen so far)")
    if shards is not None:
        raise ValueError("shards=... is for exact=True")
    total = _total_length(keys) if capacity is None else 0
    params = _filter_params(total, capacity, fpr, 0 if seed is None else seed, filter_kwargs)
    token = uuid.uuid4().hex
    parts = _partitions(collection)
    state = dask.delayed(_new_filter)(params, dask_key_name=f"cuckoo-dedup-filter-{token}")
    kept = []
    for i, part in enumerate(parts):
        part_keys = dask.delayed(_keys_of, pure=True)(part, column) if isinstance(collection, dd.DataFrame) else part
        step = dask.delayed(_dedup_step, nout=2)(state, part_keys, dask_key_name=f"cuckoo-dedup-step-{i}-{token}")
        state, mask = step
        kept.append(dask.delayed(_apply_mask, pure=True)(part, mask))
    if isinstance(collection, da.Array):
        return da.concatenate([da.from_delayed(k, shape=(math.nan,), dtype=collection.dtype) for k in kept])
    # Rows only disappear, so the index bounds of every partition (the divisions) still hold.
    return dd.from_delayed(kept, meta=collection._meta, divisions=collection.divisions, verify_meta=False)
