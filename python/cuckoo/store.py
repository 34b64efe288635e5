"""cuckoo.Store: an exact key-value store on a cuckoo index over an append-only log.

    >>> import cuckoo
    >>> with cuckoo.Store("users.ckv") as s:          # doctest: +SKIP
    ...     s["alice"] = b"admin"
    ...     s.put_many(["bob", "carol"], [b"dev", b"ops"])
    ...     s.sync()                                   # durable from here on

Keys are ``int`` (its 8-byte little-endian word), ``bytes`` or ``str`` (its UTF-8), hashed as a
``cuckoo.Filter`` hashes them; values are ``bytes`` (``str`` is stored as UTF-8). Keys come back
as ``bytes``. Memory holds only the index: a 16-bit tag and a 32-bit log offset per key (at most
~9.5 bytes a key); every "found" is checked against the key in the log, so answers are exact.

Iteration goes over live keys in the order of their last write (an overwritten key moves to the
end, as in the log). See docs/store.md for the formats and the durability promise.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import ItemsView, Iterator, MutableMapping, ValuesView
from typing import Any, Optional, Tuple, Union

from ._numpy import np

try:
    from ._core import _Store
except ImportError:  # Windows: the store's log needs POSIX files (mmap, flock, fdatasync)
    _Store = None

Key = Union[int, bytes, str]



class RecoveryWarning(UserWarning):
    """Opening a store cut off (writer) or ignored (reader) a torn or corrupt tail of its log."""


class Store(MutableMapping):
    """An exact, persistent mapping of keys to bytes on a cuckoo-indexed log.

    ``Store(path)`` opens or creates the store at ``path`` (files ``path``, locked by the writer,
    and ``path.idx`` for the index snapshot). One process writes at a time: a second writer, by
    any name or link, gets ``cuckoo.StoreLockedError``; other processes read with
    ``readonly=True``. A store belongs to the process that opened it: after ``fork()`` the child's
    writes raise ``cuckoo.StoreForkedError`` (open the store in the child instead). ``Store()`` (no
    path) keeps its log in an anonymous temporary file that disappears with the object: exact
    deduplication in one process without holding the keys in RAM.

    ``seed``: for a new store, the key hash seed (``None``: drawn from the OS, the default; it is
    stored in the file). ``tag_bits``: bits of each index tag (16; fewer only to test log
    verification: every tag match costs one log read). ``repair``: open a damaged log (otherwise
    ``cuckoo.FormatError``): the index snapshot is ignored, the whole log is read, every record that
    fails its check is skipped and every intact one kept; a writer rewrites the log without the
    damaged bytes, so that it opens cleanly afterwards (a ``RecoveryWarning`` says how many bytes
    were lost). A read that meets damage raises ``cuckoo.FormatError``, and from then on the store
    refuses writes until it is reopened with ``repair=True``.
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]] = None, *, readonly: bool = False,
                 seed: Optional[int] = None, tag_bits: int = 16, repair: bool = False) -> None:
        if _Store is None:
            raise NotImplementedError(
                "cuckoo.Store is not available on Windows: its log needs POSIX file operations (mmap, "
                "flock, fdatasync). cuckoo.Filter works on every platform.")
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "big")
        elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise TypeError("seed must be None or an int in [0, 2**64)")
        if isinstance(tag_bits, bool) or not isinstance(tag_bits, int):
            raise TypeError("tag_bits must be an int")
        log_id = int.from_bytes(os.urandom(8), "big")
        self._path = None if path is None else os.fspath(path)
        if self._path is None:
            if readonly:
                raise ValueError("readonly=True needs a path")
            import tempfile  # imported here: start-up of cuckoo dedup

            with tempfile.TemporaryFile(prefix="cuckoo-store-") as tmp:
                self._s = _Store.on_fd(tmp.fileno(), seed, tag_bits, log_id)  # keeps its own duplicate
        else:
            if isinstance(self._path, bytes):
                self._path = os.fsdecode(self._path)
            if os.path.exists(self._path) and not os.path.isfile(self._path):
                raise ValueError(f"{self._path!r} exists and is not a regular file")
            self._s = _Store.open(self._path, bool(readonly), seed, tag_bits, log_id, bool(repair))
        st = self._s.stats()
        if st["recovered_bytes"]:
            what = "dropped" if not readonly else "ignored (read-only)"
            warnings.warn(
                f"store {self._path}: {st['recovered_bytes']} bytes of torn or corrupt log in "
                f"{st['recovered_regions']} stretch(es), the first at offset {st['recovered_at']}, were {what}; "
                f"the intact records {'outside them' if repair else 'before them'} are kept",
                RecoveryWarning, stacklevel=2)

    # ---- mapping ----
    def __getitem__(self, key: Key) -> bytes:
        v = self._s.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def get(self, key: Key, default: Any = None) -> Any:
        v = self._s.get(key)
        return default if v is None else v

    def __contains__(self, key: object) -> bool:
        return self._s.contains(key)

    def __setitem__(self, key: Key, value: Union[bytes, str]) -> None:
        self._s.put(key, value)

    def __delitem__(self, key: Key) -> None:
        if not self._s.delete(key):
            raise KeyError(key)

    def discard(self, key: Key) -> bool:
        """Deletes ``key`` if present; returns whether it was."""
        return self._s.delete(key)

    def add(self, key: Key) -> bool:
        """Stores ``key`` with an empty value unless present; returns whether it was new."""
        return bool(self._s.add_unique_many([key])[0])

    def __len__(self) -> int:
        return len(self._s)

    def _records(self, with_values: bool, chunk: int = 4096) -> Iterator[Any]:
        offsets, version = self._s.live_offsets()
        for start in range(0, len(offsets), chunk):
            try:
                batch = self._s.read_records(offsets[start:start + chunk], version, with_values)
            except ValueError as exc:
                if "changed during iteration" in str(exc):
                    raise RuntimeError("Store changed during iteration") from None
                raise
            yield from batch

    def __iter__(self) -> Iterator[bytes]:
        return self._records(False)

    def items(self):  # type: ignore[override]
        return _ItemsView(self)

    def values(self):  # type: ignore[override]
        return _ValuesView(self)

    def clear(self) -> None:
        """Deletes every key (one tombstone each; compact() then reclaims the log)."""
        self._s.discard_many(list(self))

    def __repr__(self) -> str:
        if self._s.closed:
            return f"<cuckoo.Store {self._path or '(anonymous)'} closed>"
        st = self._s.stats()
        where = self._path or "(anonymous temporary file)"
        mode = "" if self._s.writable else ", read-only"
        return (f"<cuckoo.Store {where}: {st['live_keys']:,} keys, log {st['log_bytes']:,} bytes "
                f"({st['dead_bytes']:,} dead), index {st['index_bytes_per_key']:.1f} bytes/key{mode}>")

    # ---- bulk ----
    def put_many(self, keys: Any, values: Any = None) -> None:
        """Stores each key with its value (``values``: a sequence, NumPy 'S' array or Arrow
        binary array of the same length; ``None``: empty values, a set). In order: a later copy
        of a key overwrites an earlier one. Values follow the rule of ``s[k] = v``: bytes
        (bytearray, memoryview) or str; an int or ``None`` raises TypeError. All or nothing:
        an error (e.g. ``OSError`` ENOSPC) leaves the store as before the call."""
        self._s.put_many(keys, values)

    def add_unique_many(self, keys: Any) -> np.ndarray:
        """Adds the keys that are not in the store (empty values); returns, per key, whether it
        was new: the exact dedup primitive (a key repeated in the batch is new only once)."""
        return self._s.add_unique_many(keys)

    def contains_many(self, keys: Any) -> np.ndarray:
        """Per key, whether it is in the store (exact)."""
        return self._s.contains_many(keys)

    def discard_many(self, keys: Any) -> np.ndarray:
        """Deletes the keys; returns, per key, whether it was present (in order)."""
        return self._s.discard_many(keys)

    def get_many(self, keys: Any, *, format: str = "list") -> Any:
        """The value of each key, ``None`` where absent: a list (``format="list"``), or a
        ``pyarrow.LargeBinaryArray`` with nulls for absent keys (``format="arrow"``, zero copy
        from the values read)."""
        if format == "list":
            return self._s.get_many(keys)
        if format != "arrow":
            raise ValueError(f"format must be 'list' or 'arrow', not {format!r}")
        import pyarrow as pa

        found, offsets, data = self._s.get_many(keys, True)
        validity = pa.array(found, type=pa.bool_()).buffers()[1]
        return pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), len(found), [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
            null_count=int(len(found) - found.sum()))

    def reserve(self, n: int) -> None:
        """Makes room in the index for ``n`` keys in all: a bulk load that knows (about) how many
        keys come skips the index's growths on the way (each re-reads every key from the log).
        Memory is that of an index grown to ``n`` keys."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError("reserve() takes a non-negative int")
        self._s.reserve(n)

    # ---- batches ----
    @contextlib.contextmanager
    def batch(self) -> Iterator["Store"]:
        """All the writes of a ``with`` block, or none of them::

            with s.batch():
                new = s.add_unique_many(block)
                out.write(...)          # an exception here undoes the add_unique_many

        The block's writes are held in memory, so no crash can leave part of them in the log;
        leaving the block without an exception hands them to the OS at once (durable at the next
        ``sync()``). An exception (``KeyboardInterrupt`` too) rolls the store back, index and log,
        to where the block began, then propagates; so does a failed final write (an
        ``OSError``), after rolling back. ``sync()``, ``snapshot()`` and ``compact()`` are refused
        inside a batch, batches do not nest, and ``close()`` inside one rolls it back."""
        self._s.begin_batch()
        try:
            yield self
        except BaseException:
            if not self._s.closed and self._s.in_batch:
                self._s.rollback_batch()
            raise
        self._s.commit_batch()

    # ---- durability and maintenance ----
    def sync(self) -> None:
        """Makes every earlier write durable (fsync of the log)."""
        self._s.sync()

    def compact(self) -> None:
        """Rewrites the log with only the live records, atomically (a crash leaves the old log
        or the new one, never a mix), and writes a fresh index snapshot."""
        if self._path is None:
            raise ValueError("compact() needs a store with a path")
        self._s.compact(int.from_bytes(os.urandom(8), "big"))

    def snapshot(self) -> None:
        """Writes the index snapshot now (close() does it too): reopening then reads the index
        instead of the whole log. Raises ``cuckoo.ReadOnlyError`` on a read-only store."""
        self._s.snapshot()

    def stats(self) -> dict:
        """Live keys, log bytes (live and dead), index bytes per key, log reads per lookup, and
        what opening found (snapshot used, records replayed, tail recovered)."""
        return self._s.stats()

    def close(self) -> None:
        """Syncs, writes the index snapshot and releases the writer lock. Idempotent. The store
        is closed afterwards even if a write fails: the ``OSError`` is raised once, and the
        records not written then are lost as in a crash (everything before the last ``sync()``
        is kept). Rolls back an open ``batch()``."""
        self._s.close()

    @property
    def closed(self) -> bool:
        return self._s.closed

    @property
    def path(self) -> Optional[str]:
        return self._path

    @property
    def readonly(self) -> bool:
        return not self._s.writable

    @property
    def seed(self) -> int:
        return self._s.seed

    @property
    def tag_bits(self) -> int:
        return self._s.tag_bits

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        s = getattr(self, "_s", None)
        if s is not None and not s.closed:
            try:
                s.close()
            except Exception:  # pragma: no cover - interpreter shutdown
                pass

    def __reduce__(self):
        raise TypeError("a cuckoo.Store cannot be pickled: open it by path in the other process")


class _ValuesView(ValuesView):
    """values() of a Store: the values in log order, read in one pass over the log."""

    def __iter__(self) -> Iterator[bytes]:
        return (v for _, v in self._mapping._records(True))


class _ItemsView(ItemsView):
    """items() of a Store: (key, value) pairs in log order, read in one pass over the log."""

    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]:
        return self._mapping._records(True)
