"""Exactly-once reruns of ``cuckoo dedup --store STORE -o FILE`` (and ``cuckoo.dedup(src, FILE,
store=STORE)``): the run journal.

A --store run writes a block's records before it commits their keys to the store, so a run
stopped at any moment (SIGKILL, Ctrl-C, a full disk) leaves no key in the store whose record was
not written. The journal (``STORE.run``, cpp/include/cuckoo/dedup/run_journal.hpp) records with
every commit where the run stands after it: the store log's end, the sizes of its output files and where
it was in its inputs. A rerun of the same run (the same inputs, unchanged; the same output and
dropped files; the same framing and key; the same store) then

* cuts the store's log back to the last recorded commit (the keys of a block whose commit the
  journal does not hold), the output and the dropped file back to their recorded sizes,
* and goes on from the recorded input position,

so its files are byte for byte those of one run that was never stopped. A rerun of a run that
finished leaves its files as they are (nothing to do; refused when its output changed since, which a
new run would replace with nothing). Any other run (other inputs, an input
that changed, another output) starts a new run, as without a journal: its output is rewritten
with the records whose keys the store does not hold.

Only where every file allows it: inputs that are regular uncompressed files, outputs (-o and
--dropped) that are regular files or do not exist yet (a compressed one ends a member at each
commit, cuckoo._dedup.compress.CompressingWriter.end_member: it is cut where one ended), the
native pipeline. Other
runs (stdin, pipes, compressed files, stdout) stay at least once: a record written when the run
stopped may be written again by the rerun, none is lost.
"""

from __future__ import annotations

import os
import stat
from typing import Any, List, Optional

from cuckoo import _core

from .errors import EXIT_USAGE, ReportedError

JOURNAL_SUFFIX = ".run"


class ResumeError(ReportedError, ValueError):
    """An interrupted run that cannot be resumed exactly (its files changed since): one line,
    exit 1. Removing the output starts the run over."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


def journal_path(store_path: str) -> str:
    return store_path + JOURNAL_SUFFIX


class RunPlan:
    """What a --store run does with its journal: ``mode`` "new" (start from the beginning),
    "resume" (go on from ``point``) or "done" (the same run finished: nothing to do)."""

    def __init__(self, mode: str, store_path: str, run_id: int, point: Optional[dict]) -> None:
        self.mode = mode
        self.store_path = store_path
        self.journal = journal_path(store_path)
        self.run_id = run_id
        self.point = point
        self.cut_bytes = 0  # store log bytes cut back (resume)

    @property
    def out_at(self) -> Optional[int]:
        """The bytes of the output to keep (None: write it anew)."""
        return int(self.point["out_bytes"]) if self.mode == "resume" and self.point else None

    @property
    def dropped_at(self) -> Optional[int]:
        return int(self.point["dropped_bytes"]) if self.mode == "resume" and self.point else None

    def start_point(self, first_line: int) -> dict:
        """The point the pipeline starts from (its store and output figures are filled in by
        the pipeline itself)."""
        if self.mode == "resume":
            assert self.point is not None
            start = dict(self.point)
        else:
            start = dict(input=0, input_offset=0, input_line=first_line, records=0, kept=0)
        start.update(run_id=self.run_id, sequence=int(self.point["sequence"]) if self.point else 0,
                     store_log_id=0, store_end=0, out_bytes=0, dropped_bytes=0, done=False)
        return start

    def open_journal(self) -> int:
        return os.open(self.journal, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)


def _plain_output(target: Any) -> Optional[str]:
    """The path of an output the journal can cut back: a regular file (compressed ones are cut
    where a member ends), or one that does not exist yet; else None."""
    if not isinstance(target, (str, os.PathLike)):
        return None
    path = os.fspath(target)
    if path == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    return os.path.realpath(path)


def _size(path: Optional[str]) -> Optional[int]:
    if path is None:
        return 0
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def _framing_identity(framing: Any) -> str:
    """The framing and key as given (not what a header resolved them to); None is whole lines."""
    fields = {k: v for k, v in sorted(getattr(framing, "__dict__", {}).items()) if k not in ("columns", "_first_header")}
    if fields.get("record_end") == b"\n":  # (whole lines: as a run journaled before -z existed named them)
        del fields["record_end"]
    return repr(("LineFraming" if framing is None else type(framing).__name__, fields))


def plan_run(store: Any, out: Any, dropped: Any, sources: List[Any], framing: Any) -> Optional[RunPlan]:
    """The journal's plan for a --store run, or None when the run cannot keep one (see the
    module docstring). A resumed run's store log is cut back here, before the store is opened
    (ResumeError when the files changed since in a way that makes resuming inexact)."""
    if os.name == "nt" or store is None or not isinstance(store, (str, os.PathLike)):
        return None
    if framing is not None and not getattr(framing, "native", False):  # (None: whole lines)
        return None
    out_path = _plain_output(out)
    dropped_path = _plain_output(dropped) if dropped is not None else None
    if out_path is None or (dropped is not None and dropped_path is None):
        return None
    identity: List[Any] = []
    for src in sources:
        if src.path is None or src.stream is not None:
            return None
        try:
            st = os.stat(src.path)
        except OSError:
            return None  # (the run reports it)
        if not stat.S_ISREG(st.st_mode) or src.compressed():
            return None
        identity.append((os.path.realpath(src.path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    store_path = os.fspath(store)
    import hashlib  # (here: start-up of cuckoo dedup)

    digest = hashlib.blake2b(repr(("cuckoo dedup run 1", os.path.realpath(store_path), out_path, dropped_path,
                                   _framing_identity(framing), identity)).encode("utf-8", "surrogateescape"),
                             digest_size=8).digest()
    run_id = int.from_bytes(digest, "little")
    points = read_points(journal_path(store_path))
    newest = points[0] if points else None
    if newest is None or newest["run_id"] != run_id:
        return RunPlan("new", store_path, run_id, newest)
    out_size, dropped_size = _size(out_path), _size(dropped_path)
    try:
        log_size = os.stat(store_path).st_size
    except FileNotFoundError:
        log_size = None
    if out_size is None or dropped_size is None or log_size is None:
        return RunPlan("new", store_path, run_id, newest)  # (an output or the store removed: the run starts over)
    if newest["done"]:
        if out_size == newest["out_bytes"] and dropped_size == newest["dropped_bytes"]:
            return RunPlan("done", store_path, run_id, newest)
        # Rerun as a new run, this would rewrite the output with only the records the store does
        # not hold (none): what the finished run wrote would be lost.
        raise ResumeError(f"cuckoo: this run finished before, and '{out}' or the dropped file changed since "
                          f"({out_size:,} bytes, the run left {newest['out_bytes']:,}): a rerun would replace it "
                          f"with the records the store does not hold; remove '{out}' to run it again")
    # The point of the last commit that completed: a point is recorded before its commit, so
    # the newer one's log end is past the log's when its commit did not complete (the older
    # point, in the journal's other slot, is then the block before).
    reached = [p for p in points if p["run_id"] == run_id and p["store_end"] <= log_size]
    if not reached:
        raise ResumeError(f"cuckoo: cannot resume the interrupted run into '{out}': the store's log ends before its "
                          f"last commit (it lost records); remove '{out}' to start the run over")
    point = dict(reached[0], sequence=newest["sequence"])
    for size, at, name in ((out_size, point["out_bytes"], out), (dropped_size, point["dropped_bytes"], dropped)):
        if size < at:
            raise ResumeError(f"cuckoo: cannot resume the interrupted run: '{name}' holds {size:,} bytes, fewer than "
                              f"the {at:,} it had written; remove '{out}' to start the run over")
    plan = RunPlan("resume", store_path, run_id, point)
    try:
        plan.cut_bytes = _core._cut_store_log(store_path, int(point["store_log_id"]), int(point["store_end"]))
    except FileNotFoundError:
        return RunPlan("new", store_path, run_id, point)  # (the store is gone: a new one, a new run)
    except ValueError as exc:
        raise ResumeError(f"cuckoo: cannot resume the interrupted run into '{out}': {exc}; remove '{out}' to start "
                          f"the run over") from None
    return plan


def read_points(path: str) -> List[dict]:
    """The journal's valid points, newer first (none: no journal, or none valid)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    try:
        return list(_core._run_journal_read(fd))
    finally:
        os.close(fd)
