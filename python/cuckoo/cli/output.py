"""Output and progress: the kept lines' sink (stdout or -o FILE), the progress line on
stderr, the final report's number formats, and the refusal to overwrite an input."""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import IO, List, Optional, Sequence, Tuple, Union

from cuckoo._dedup import compress
from cuckoo._dedup.report import Progress, _bytes, _si, _small  # noqa: F401 (re-exported)
from cuckoo._dedup.engine import write_error  # noqa: F401 (re-exported)
from cuckoo._dedup.outputs import OutputFile, refuse_clobber, same_file as _same_file, store_files  # noqa: F401
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


def unit_of(framing: object) -> str:
    """What the run's report counts: "lines" for whole lines (the default, and -z's records),
    "records" for keyed framings (--csv, --jsonl, -t), whose records may span several lines (a CSV
    field with a newline) so that a count of lines would not match ``wc -l``."""
    from cuckoo._dedup.sources import LineFraming

    return "lines" if framing is None or isinstance(framing, LineFraming) else "records"


def note_run(args: argparse.Namespace, r: object, unit: str) -> None:
    """The first line of dedup's report: records read, written and dropped, and the rate."""
    read, kept, dropped, seconds = r.lines_read, r.lines_kept, r.lines_dropped, r.seconds  # type: ignore[attr-defined]
    _note(args, f"cuckoo dedup: {read:,} {unit} read, {kept:,} written, {dropped:,} dropped in {seconds:.2f} s "
                f"({_si(read / max(seconds, 1e-9))} {unit}/s)")


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


def inputs_of(sources: List[Source]) -> List[Tuple[str, str]]:
    return [(src.path, "an input") for src in sources if src.path is not None]


class Output:
    """stdout or -o FILE, written in whole blocks."""

    def __init__(self, path: Optional[str], inputs: List[Source], atomic: bool = True,
                 resume_at: Optional[int] = None) -> None:
        self.path = path
        self.what = "to standard output"
        if path is None or path == "-":
            self.fh: IO[bytes] = sys.stdout.buffer
            self.owned = False
            return
        self.what = f"output '{path}'"
        refuse_clobber(path, "output", inputs_of(inputs))
        try:
            # NAME.gz/.bz2/.xz/.zst: compressed on a thread of its own (cuckoo._dedup.compress); written
            # to a temporary file beside it and renamed at the end of a run that succeeds
            # (`atomic`: unless a store records what was written)
            self.fh = OutputFile(path, atomic, resume_at)  # (resume_at: a --store run resumed, cuckoo._dedup.resume)
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
        """The end of a run that succeeded: flushes stdout, or closes the file and puts it in place."""
        try:
            if self.owned:
                self.fh.commit()
            else:
                self.fh.flush()
        except OSError as exc:
            raise write_error(self.what, exc) from None

    def abort(self) -> None:
        """The end of a run that failed: a file output is removed (its target stays as it was)."""
        if self.owned:
            self.fh.abort()


def _discard_stdout() -> None:
    # What a failed write left in stdout's buffer would fail again when Python flushes it at exit
    # (a second report and exit status 120): point stdout at the null device instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # pragma: no cover - stdout replaced or closed
        pass


def finish_outputs(ok: bool, *outputs: Optional[Output]) -> None:
    """The end of a command's run: each output closed (files put in place) when it succeeded
    (`ok`), else removed, so that a failed run leaves its targets as they were. An output that
    fails to close removes the others."""
    present = [o for o in outputs if o is not None]
    if ok:
        try:
            for o in present:
                o.close()
            return
        except BaseException:
            for o in present:
                o.abort()
            raise
    for o in present:
        o.abort()
