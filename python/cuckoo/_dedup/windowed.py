"""Dedup within a window (``window=``; ``cuckoo dedup --window``): a record is dropped when its key
occurred among the previous N records (``window=N``), or less than a duration earlier in arrival
time (``window="10m"``: ``tail -f log | cuckoo dedup --window 10m``). One streaming pass through
the native pipeline (cpp/include/cuckoo/dedup/windowed.hpp) on a :class:`cuckoo.Window`'s
generations, so memory is bounded by the keys of about one window. Exact, or approximate with
``exact=False`` (filters: about 2 bytes a key)."""

from __future__ import annotations

import os
import re
import time
from typing import Any, Callable, List, NamedTuple, Optional

import cuckoo

from .counted import native_only, through_files
from .records import CsvFraming, FieldFraming, JsonlFraming
from .sources import Source

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
# The generations of a dedup window: its state holds at most 1/8 of a window more (cuckoo.Window's
# default is 4: fewer sets to probe, more memory). Measured (AMD EPYC, 2 vCPUs, quiet), a count
# window of 10^6 over 10^7 hex lines: 4 generations 2.2 s and 67.8 MiB peak RSS, 8 generations
# 2.6-2.7 s and 62.3 MiB (--exact over 10^6 distinct lines of the kind: 64.4 MiB).
GENERATIONS = 8


class WindowSpec(NamedTuple):
    records: int    # > 0: a count window
    seconds: float  # > 0: a window of arrival time (records == 0)

    def describe(self) -> str:
        return f"the last {self.records:,} records" if self.records else f"{self.seconds:g} s of arrival time"


def window_spec(window: Any) -> Optional[WindowSpec]:
    """The window of `window`: None; an int (records: ``window=1000``); a str, records (``"1000"``)
    or a duration with its unit (``"10m"``, ``"24h"``, ``"1.5s"``; ms, s, m, h, d); a
    datetime.timedelta. ValueError (TypeError) naming what is wrong."""
    if window is None:
        return None
    if isinstance(window, bool):
        raise TypeError("cuckoo.dedup: window must be a number of records, a duration such as '10m', or a timedelta")
    if isinstance(window, int):
        if window < 1:
            raise ValueError(f"cuckoo.dedup: a window of records must be at least 1, got {window}")
        return WindowSpec(window, 0.0)
    if isinstance(window, str):
        text = window.strip()
        if text.isdigit():
            return window_spec(int(text))
        m = _DURATION.fullmatch(text)
        if m is None:
            raise ValueError(f"cuckoo.dedup: window {window!r} is neither a number of records nor a duration "
                             f"(a number and a unit: 500ms, 30s, 10m, 24h, 7d)")
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    elif hasattr(window, "total_seconds"):
        seconds = float(window.total_seconds())
    else:
        raise TypeError(f"cuckoo.dedup: window must be a number of records, a duration such as '10m', or a "
                        f"timedelta, not {type(window).__name__}")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"cuckoo.dedup: a window must be a positive duration, got {window!r}")
    return WindowSpec(0, seconds)


def time_framing_of(framing: Any, time_key: Any) -> Any:
    """The framing of the field `time_key` of the records that `framing` keys (the same kind:
    a CSV column, a JSON path, a separated field)."""
    if isinstance(framing, CsvFraming):
        return CsvFraming(time_key, delimiter=framing.delimiter)
    if isinstance(framing, JsonlFraming):
        return JsonlFraming(str(time_key))
    if isinstance(framing, FieldFraming):
        return FieldFraming(bytes([framing.sep]), time_key)
    raise ValueError("cuckoo.dedup: time_key= is a field of keyed records (key= with csv=, jsonl= or sep=; "
                     "--csv, --jsonl or -t with -k)")


def dedup_window(sources: List[Source], out: Any, dropped: Any, block: int, threads: Optional[int],
                 report: Callable[[int, int], None], framing: Any, spec: WindowSpec, exact: bool,
                 fpr: Optional[float], seed: Optional[int], time_framing: Any = None) -> Any:
    """cuckoo.dedup() with `window` (and, event time, the framing of the time field): the native
    run. Returns a DedupResult."""
    native_only("windows", framing)
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    rate = fpr if fpr is not None else 1e-4
    return through_files(sources, out, dropped, False,
                         lambda s, o, d: _run(s, o, d, block, threads, report, framing, spec, exact, rate, seed,
                                              time_framing))


def _run(sources: List[Source], out: Any, dropped: Any, block: int, threads: Optional[int],
         report: Callable[[int, int], None], framing: Any, spec: WindowSpec, exact: bool, fpr: float,
         seed: int, time_framing: Any) -> Any:
    from . import engine  # (engine imports this module when a run asks for a window)

    sink, drop_sink = engine._as_sink(out), engine._as_sink(dropped)
    native = engine._plan(sources, framing, sink, drop_sink)
    if native is None:  # (every input and output has a file descriptor by now)
        engine._abort_opened(sink, drop_sink)
        raise ValueError("cuckoo.dedup: a window needs inputs and outputs with file descriptors")
    start = time.perf_counter()
    ok = False
    try:
        time_spec = None
        if time_framing is not None:
            if isinstance(time_framing, CsvFraming):
                time_framing.resolve(native.header_names or [])
            time_spec = time_framing.native_spec()
        d = native.run(cuckoo._core._dedup_window, sources, (sink, drop_sink), block,
                       threads or engine.default_threads(), None if report is engine._no_progress else report,
                       spec.records, spec.seconds, exact, fpr, GENERATIONS, seed, time_framing=time_spec)
        ok = True
    finally:
        engine._finish(sink, drop_sink, ok)
    stats = {"records": spec.records or None, "seconds": spec.seconds or None, "keys": d["window_keys"],
             "memory": d["window_memory"], "peak_memory": d["window_peak_memory"], "generations": d["generations"],
             "fpr_bound": d["fpr_bound"], "late": d["late"], "untimed": d["untimed"],
             "event_time": time_framing is not None}
    return engine.DedupResult(d["lines"], d["kept"], d["bytes"], time.perf_counter() - start, exact,
                              window_stats=stats)
