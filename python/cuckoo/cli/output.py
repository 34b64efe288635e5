"""Output and progress: the kept lines' sink (stdout or -o FILE), the progress line on
stderr, the final report's number formats, and the refusal to overwrite an input."""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import IO, List, Optional, Sequence, Tuple, Union

from cuckoo import _compress as compress
from cuckoo._dedup.report import Progress, _bytes, _si, _small  # noqa: F401 (re-exported)
from cuckoo._dedup.engine import write_error  # noqa: F401 (re-exported)
from cuckoo._dedup.sources import Source

from .common import CliError, EXIT_USAGE, EXIT_WRITE, _one_line


# ---- progress and reports --------------------------------------------------------------------


def _progress_enabled(args: argparse.Namespace) -> bool:
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _note(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def write_stdout(data: Union[str, bytes], flush: bool = False) -> None:
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        if flush:
            sys.stdout.flush()
    except OSError as exc:
        raise write_error("to standard output", exc) from None


def _same_file(a: str, b: str) -> bool:
    """Whether paths a and b name one file: by identity (device and inode, so symlinks and hard
    links count) when both exist, else by their resolved paths (a file about to be created)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        try:
            return os.path.realpath(a) == os.path.realpath(b)
        except (OSError, ValueError):
            return False


def store_files(path: str) -> List[Tuple[str, str]]:
    """(path, what) of each file a store at `path` owns: its log, index snapshot (and the
    snapshot's temporary file), lock, and compaction's temporary log."""
    return [(path, f"the store '{path}'"), (path + ".idx", f"the snapshot of the store '{path}'"),
            (path + ".idx.tmp", f"a temporary file of the store '{path}'"),
            (path + ".lock", f"the lock of the store '{path}'"),
            (path + ".compact", f"a temporary file of the store '{path}'")]


def refuse_clobber(path: Optional[str], what: str, protected: Sequence[Tuple[str, str]],
                   refusal: str = "refusing to overwrite it") -> None:
    """Exit 1 when `path` (a file this command writes, or reads while it writes `protected`) is
    one of the `protected` files: an input, a store's files, a filter file read or saved.
    Called before anything is opened or written."""
    if path is None or path == "-":
        return
    for other, role in protected:
        if other != "-" and _same_file(path, other):
            raise CliError(f"cuckoo: {what} '{path}' is also {role}: {refusal}", EXIT_USAGE)


def inputs_of(sources: List[Source]) -> List[Tuple[str, str]]:
    return [(src.path, "an input") for src in sources if src.path is not None]


class Output:
    """stdout or -o FILE, written in whole blocks."""

    def __init__(self, path: Optional[str], inputs: List[Source]) -> None:
        self.path = path
        self.what = "to standard output"
        if path is None or path == "-":
            self.fh: IO[bytes] = sys.stdout.buffer
            self.owned = False
            return
        self.what = f"output '{path}'"
        refuse_clobber(path, "output", inputs_of(inputs))
        try:
            # NAME.gz/.bz2/.xz/.zst: compressed on a thread of its own (cuckoo._compress)
            self.fh = compress.open_output(path)
        except (OSError, ImportError) as exc:
            raise CliError(f"cuckoo: cannot write output '{path}': {_one_line(exc)}", EXIT_USAGE) from None
        self.owned = True

    def write(self, data: bytes) -> None:
        if data:
            try:
                self.fh.write(data)
            except OSError as exc:
                raise write_error(self.what, exc) from None

    def flush(self) -> None:
        """Hands what was written to the OS (no fsync)."""
        try:
            self.fh.flush()
        except OSError as exc:
            raise write_error(self.what, exc) from None

    def close(self) -> None:
        try:
            if self.owned:
                self.fh.close()
            else:
                self.fh.flush()
        except OSError as exc:
            raise write_error(self.what, exc) from None


def _discard_stdout() -> None:
    # What a failed write left in stdout's buffer would fail again when Python flushes it at exit
    # (a second report and exit status 120): point stdout at the null device instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # pragma: no cover - stdout replaced or closed
        pass
