"""Saving, loading and pickling filters (the format is specified in docs/format.md).

Installed onto :class:`cuckoo.Filter` by ``install``: ``Filter.save(target)``,
``Filter.load(source, mmap=False, *, verify=False)`` and ``__reduce__`` (pickle). The bytes
themselves come from the compiled core (``Filter.to_bytes`` / ``Filter.from_bytes``, and for file
objects ``_write_to`` / ``_read_from``, which stream in chunks of at most 1 MiB).

A target or source is a local path, a binary file object (anything with ``write`` / ``read``),
or, when fsspec is installed, a URL such as ``s3://bucket/f.cuckoo`` or ``memory://f.cuckoo``.
"""

from __future__ import annotations

import errno
import mmap as _mmap
import os
import re
import stat
from typing import Any, Callable, Optional, Tuple, Union

from . import _core

# Not spelled as strings: typing compiles those, and a process's first compile() costs 3 ms.
PathLike = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]

# "scheme://...": a URL for fsspec (two letters at least, so that "C://x" stays a Windows path)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def _is_url(target: Any) -> bool:
    return isinstance(target, str) and _URL.match(target) is not None


def _fsspec_open(url: str, mode: str) -> Any:
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"{url!r} is a URL: saving and loading URLs needs fsspec (pip install fsspec, "
            "plus the filesystem's package, e.g. s3fs for s3://)"
        ) from None
    return fsspec.open(url, mode)


def _is_file_object(obj: Any, method: str) -> bool:
    return not isinstance(obj, (str, bytes, os.PathLike)) and callable(getattr(obj, method, None))


def _check_no_trailing_data(fh: Any, what: str) -> None:
    if fh.read(1):
        raise _core.FormatError(f"trailing data: {what} goes on after the length its header declares")


def _restore(data: bytes) -> Any:
    """Pickle's reconstructor: a filter from ``Filter.to_bytes()`` output."""
    return _core.Filter.from_bytes(data)


def _reduce(self: Any) -> Tuple[Callable[[bytes], Any], Tuple[bytes]]:
    # The same bytes as to_bytes: pickles are portable and checked like files. The reconstructor
    # is looked up by name, so a pickle only needs `cuckoo` importable where it is loaded.
    return (_restore, (self.to_bytes(),))


# Reads of a pipe or device go in steps of at most this many bytes.
_STREAM_STEP = 16 << 20


def _temp_prefix(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.")


def _temp_path(path: str) -> str:
    # The writer's process id is part of the name: a later save can tell the temporaries of a
    # process that died (kill -9 mid-save) from those of a save still running (_remove_stale).
    return f"{_temp_prefix(path)}{os.getpid()}.{os.urandom(6).hex()}.tmp"


def _remove_stale(path: str) -> None:
    """Removes temporary files of earlier saves to ``path`` whose process no longer exists."""
    if os.name != "posix":  # pragma: no cover - no cheap "is this process alive" test elsewhere
        return
    directory, prefix = os.path.split(_temp_prefix(path))
    try:
        entries = [e.name for e in os.scandir(directory or ".") if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except OSError:  # pragma: no cover - an unreadable directory: the save itself will say so
        return
    for name in entries:
        pid_text = name[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:  # pragma: no cover - removed by another save meanwhile
                pass
        except (OSError, OverflowError):  # alive (another user's) or not a process id
            pass


def _save_target(path: str) -> str:
    """The file a save to ``path`` writes: the target of a symlink (the link stays a link).

    Refuses a path that exists and is not a regular file: renaming over it would replace a device
    node, a FIFO or a socket with a regular file.
    """
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory: nothing was replaced", target)
    if not stat.S_ISREG(st.st_mode):
        raise FileExistsError(errno.EEXIST, "exists and is not a regular file: nothing was replaced", target)
    return target


def _unnamed_file(directory: str) -> Optional[int]:
    """An unnamed file in ``directory`` (Linux O_TMPFILE), or None where the OS or the file
    system offers none. A crash before it is linked leaves nothing behind."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:  # pragma: no cover - not Linux
        return None
    try:
        return os.open(directory or ".", flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError:
        return None


def _link_unnamed(fd: int, tmp: str) -> bool:
    """Gives the unnamed file ``fd`` the name ``tmp``; False if that is not possible here."""
    try:
        os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)  # linkat(..., AT_SYMLINK_FOLLOW)
    except OSError:
        return False
    return True


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable. POSIX only: Windows cannot open a directory this way, and
    # some file systems refuse fsync on directories; both are harmless to skip.
    if os.name != "posix":  # pragma: no cover
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_file(self: Any, fd: int, path: str) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        pass
    else:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
    self._write_fd(fd)
    os.fsync(fd)


def save(self: Any, path: Union[PathLike, Any]) -> None:
    """Write the filter to ``path`` (atomically), to a binary file object, or to a URL.

    A file object (anything with ``write``, e.g. ``open(..., "wb")``, ``io.BytesIO``, a socket's
    file, a pipe) gets the bytes of ``to_bytes()`` through ``write`` in chunks of at most 1 MiB, so
    memory stays bounded; it is flushed, not closed, and nothing is written before or after. A
    URL (``"s3://bucket/f.cuckoo"``, ``"memory://f.cuckoo"``; any ``scheme://``) is opened with
    fsspec (``pip install fsspec``) and written the same way; object stores make the object
    visible when it is complete. ``write`` must not change this filter.

    A local path:

    The bytes (``to_bytes()``, streamed from the table without a second copy in memory) go to a
    temporary file in the same directory, which is flushed to disk (fsync) and then renamed over
    ``path`` (``os.replace``); the directory is fsynced too where the OS allows it. Readers see the
    old file or the new one, never a partial one, also after a crash. An existing file's
    permission bits are kept; a new file gets the usual ones (0o666 minus the umask).

    A symlink is written through: its target gets the new bytes. A path that exists and is not a
    regular file (a device, a FIFO, a directory) is refused with an OSError and left alone.
    Where the OS offers unnamed files (Linux ``O_TMPFILE``) the temporary file has a name only for
    the instant before the rename, so a killed save leaves nothing behind; elsewhere, and in that
    instant, the temporary file's name carries the process id, and the next save to the same path
    removes temporaries whose process is gone.
    """
    if _is_file_object(path, "write"):
        self._write_to(path.write)
        flush = getattr(path, "flush", None)
        if callable(flush):
            flush()
        return
    if _is_url(path):
        with _fsspec_open(path, "wb") as fh:
            self._write_to(fh.write)
        return
    path = _save_target(os.fsdecode(os.fspath(path)))
    _remove_stale(path)
    tmp = _temp_path(path)
    fd = _unnamed_file(os.path.dirname(path))
    named = False  # whether `tmp` exists (and must go if anything fails)
    try:
        try:
            if fd is not None:
                _write_file(self, fd, path)
                named = _link_unnamed(fd, tmp)
                if not named:  # no /proc to name it through: write a named temporary file instead
                    unnamed, fd = fd, None
                    os.close(unnamed)
            if fd is None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
                fd = os.open(tmp, flags, 0o666)
                named = True
                _write_file(self, fd, path)
        finally:
            if fd is not None:
                os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if named:
            try:
                os.unlink(tmp)
            except OSError:  # pragma: no cover
                pass
        raise
    _fsync_directory(os.path.dirname(os.path.abspath(path)))


def load(cls: Any, path: Union[PathLike, Any], mmap: bool = False, *, verify: bool = False) -> Any:
    """Read a filter written by ``save`` (or ``to_bytes``) from ``path``, a binary file object or
    a URL.

    A file object (anything with ``read``) is read in chunks of at most 1 MiB, each table straight
    into the new filter's memory; the header is checked before anything it declares is allocated,
    and every table is verified (checksum, item count). Reading stops at the length the header
    declares, so the stream may hold more after the filter (read the next thing from there). A URL
    (``"s3://..."``, ``"memory://..."``) is opened with fsspec and read the same way; bytes after
    the filter are an error there, as in a file. ``mmap=True`` needs a local path.

    ``mmap=False`` (default): the table is copied into memory and every byte is verified (header
    checksum, table checksum, item count); the result is an ordinary, writable filter.

    ``mmap=True``: the file is memory-mapped read-only and the table is used in place. Only the
    header is read and checked, so this takes about the same time for 1 KiB and 1 GiB, and pages
    of the table are read from disk as lookups touch them. Writes raise ``cuckoo.ReadOnlyError``;
    ``copy()`` gives a writable in-memory filter. ``verify=True`` also checks the table checksum
    and item count, which reads the whole file; without it, ``copy()`` and ``save()`` recount
    the tables first and raise ``FormatError`` if the header disagrees. Keep the file unchanged
    while the filter is alive: ``save()`` over it is safe (it replaces the file, the mapping keeps
    the old one), but truncating it in place makes lookups crash (SIGBUS), as with any
    memory-mapped file.

    A path that is not a regular file (a pipe, a device) is read in bounded steps against the
    sizes its header declares, each checked before it is used (``_read_stream``).
    """
    if not isinstance(mmap, bool):
        raise TypeError(f"mmap must be a bool, not {type(mmap).__name__}")
    if not isinstance(verify, bool):
        raise TypeError(f"verify must be a bool, not {type(verify).__name__}")
    streamed = _is_file_object(path, "read") or _is_url(path)
    if streamed and mmap:
        what = "a URL" if _is_url(path) else "a file object"
        raise ValueError(f"mmap=True needs a local file path, not {what}: load it without mmap "
                         "(the table is then read into memory)")
    if _is_file_object(path, "read"):
        return cls._read_from(path.read)
    if _is_url(path):
        with _fsspec_open(path, "rb") as fh:
            f = cls._read_from(fh.read)
            _check_no_trailing_data(fh, path)
        return f
    with open(os.fspath(path), "rb") as fh:
        st = os.fstat(fh.fileno())
        mapped = None
        if stat.S_ISREG(st.st_mode) and st.st_size > 0:
            try:
                mapped = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_READ)
            except (OSError, ValueError):  # not mappable here: read it instead
                mapped = None
        if mapped is None:
            data = _read_stream(fh)
            # Without a mapping, mmap=True still gives what it promises: a read-only filter.
            return _core.Filter._from_view(data, verify) if mmap else _core.Filter.from_bytes(data)  # type: ignore[no-any-return]
    if mmap:
        if verify:
            _advise(mapped, "MADV_SEQUENTIAL")
        try:
            f = _core.Filter._from_view(mapped, verify)
        except BaseException:
            mapped.close()
            raise
        # Lookups touch random pages: no readahead of pages no lookup needs.
        _advise(mapped, "MADV_RANDOM")
        return f  # type: ignore[no-any-return]
    try:
        _advise(mapped, "MADV_SEQUENTIAL")
        return _core.Filter.from_bytes(mapped)  # type: ignore[no-any-return]
    finally:
        mapped.close()


def _read_stream(fh: Any) -> bytearray:
    """The serialized filter from a file without a usable size (a pipe, a device), read in
    bounded steps against the sizes its header declares, checked before they are trusted: junk
    is refused after 64 bytes, ``/dev/zero`` ends at once. One byte past the declared end is read
    too, so that ``from_bytes`` reports trailing data rather than ignoring it."""
    buf = bytearray()
    need = _core.Filter._bytes_needed(buf)
    while len(buf) < need:
        chunk = fh.read(min(need - len(buf), _STREAM_STEP))
        if not chunk:
            return buf  # truncated: from_bytes says so
        buf += chunk
        if len(buf) == need:
            need = max(need, _core.Filter._bytes_needed(buf))
    buf += fh.read(1)
    return buf


def _advise(mapped: _mmap.mmap, name: str) -> None:
    advice = getattr(_mmap, name, None)
    if advice is not None and hasattr(mapped, "madvise"):
        try:
            mapped.madvise(advice)
        except OSError:  # pragma: no cover - advisory only
            pass


def install(cls: type) -> None:
    cls.save = save  # type: ignore[attr-defined]
    cls.load = classmethod(load)  # type: ignore[attr-defined]
    cls.__reduce__ = _reduce  # type: ignore[assignment, method-assign]
