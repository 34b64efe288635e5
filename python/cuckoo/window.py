"""cuckoo.Window: dedup within a sliding window, one key (or one batch) at a time.

The compiled core is cuckoo::Window (cpp/include/cuckoo/window.hpp, bound as _core._Window); this
class checks arguments, reads the clock for arrival-time windows and turns the core's verdicts
into booleans. NumPy is imported on first bulk use only (``import cuckoo`` must not import it).
"""

from __future__ import annotations

import math
import os
import time as _time
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _core

if TYPE_CHECKING:
    import datetime as _dt

__all__ = ["Window"]

_KEPT, _DUPLICATE, _LATE = 0, 1, 2


def _seconds(value: object, name: str) -> float:
    total_seconds = getattr(value, "total_seconds", None)  # datetime.timedelta (not imported here)
    if callable(total_seconds) and not isinstance(value, (int, float)):
        return float(total_seconds())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or a datetime.timedelta, not {type(value).__name__}")
    return float(value)


class Window:
    """Remembers the keys of a sliding window and tells, for each new record, whether its key
    occurred within the window. Memory is bounded by the keys of about one window.

    ``Window(records=N)``: record *i* is a duplicate iff its key is among the previous *N*
    records (all of them count, duplicates included: the model is a deque of the last *N* keys).

    ``Window(seconds=D)``: each record has a time *t* (seconds, e.g. epoch seconds; a
    ``datetime`` or a ``datetime64`` array is taken as its epoch seconds). With *M*
    the largest time seen so far, and ``lateness`` *L* (default *D*, as Spark's
    ``dropDuplicatesWithinWatermark`` uses one duration for both):

    * *t* < *M* - *L*: the record is **late**. It is kept (``seen`` returns False), counted in
      :attr:`late`, and not remembered: the state that could decide it may be gone, and a late
      record is never dropped by mistake.
    * otherwise it is a duplicate iff an earlier, not late, record of the same key has a time
      *t'* with ``abs(t - t') < D`` (duplicates count as earlier records), and it is remembered.

    Without times, a time window uses the time of arrival: ``clock()`` (default
    :func:`time.monotonic`) read once per :meth:`seen` call and once per :meth:`seen_many`
    batch. A window takes times always or never: the first call decides. Arrival times never
    go back, so an arrival-time window's lateness is 0 unless given: its state spans one
    window, where an event-time window's spans ``seconds + lateness``.

    ``exact=True`` (the default) answers exactly, holding each key's bytes. ``exact=False`` (or
    giving ``fpr``) keeps cuckoo filters instead, about 2 bytes a key: it never misses a duplicate
    within the window, but may call a record a duplicate when its key occurred up to one
    generation beyond the window (``records + records / generations`` back, or ``seconds`` plus
    one generation's width of time), or by a fingerprint collision with probability at most
    :attr:`fpr_bound` (``fpr`` split over the generations of a window).

    The state is ``generations`` slices of the window that expire whole, oldest first: memory
    holds at most one slice more than the window. Keys are ``int``, ``bytes`` or ``str``, as
    for :class:`cuckoo.Filter`.

        >>> w = cuckoo.Window(records=3)
        >>> [w.seen(k) for k in "abcab"]
        [False, False, False, True, True]
    """

    __slots__ = ("_w", "_records", "_seconds", "_exact", "_fpr", "_clock", "_timed", "_remake", "__weakref__")

    def __init__(
        self,
        records: Optional[int] = None,
        *,
        seconds: Optional[float | _dt.timedelta] = None,
        exact: Optional[bool] = None,
        fpr: Optional[float] = None,
        lateness: Optional[float | _dt.timedelta] = None,
        generations: int = 4,
        seed: Optional[int] = None,
        clock: Optional[Callable[[], float]] = None,
    ) -> None:
        if (records is None) == (seconds is None):
            raise TypeError("give one of records= (a count window) or seconds= (a time window)")
        n, d, late = 0, 0.0, -1.0
        if records is not None:
            if isinstance(records, bool) or not isinstance(records, int):
                raise TypeError(f"records must be an int, not {type(records).__name__}")
            if records < 1:
                raise ValueError(f"records must be at least 1, not {records}")
            if lateness is not None or clock is not None:
                raise TypeError("lateness and clock are for time windows (seconds=)")
            n = records
        else:
            d = _seconds(seconds, "seconds")
            if not (d > 0 and math.isfinite(d)):
                raise ValueError(f"seconds must be positive and finite, not {d}")
            if lateness is not None:
                late = _seconds(lateness, "lateness")
                if not (late >= 0 and math.isfinite(late)):
                    raise ValueError(f"lateness must be a finite number >= 0, not {late}")
        if exact is None:
            exact = fpr is None
        if exact and fpr is not None:
            raise ValueError("fpr is for approximate windows: pass exact=False, or leave fpr out")
        if not exact:
            fpr = 0.001 if fpr is None else float(fpr)
            if not (0 < fpr < 1):
                raise ValueError(f"fpr must be in (0, 1), not {fpr}")
        if isinstance(generations, bool) or not isinstance(generations, int) or not 1 <= generations <= 1024:
            raise ValueError(f"generations must be an int in [1, 1024], not {generations!r}")
        if seed is None:
            # A seed from the OS: the hash is public, and adversarial keys could fill one bucket.
            seed = int.from_bytes(os.urandom(8), "little")
        self._w = _core._Window(n, d, late, bool(exact), fpr or 0.0, generations, seed)
        self._records = records
        self._seconds = None if seconds is None else d
        self._exact = bool(exact)
        self._fpr = None if exact else fpr
        self._clock = _time.monotonic if clock is None else clock
        self._timed: Optional[bool] = None  # time windows: None until the first call says
        # Arrival times never go back: an arrival-time window needs no lateness, and its state
        # then spans one window (D) instead of two. Its first call remakes the (empty) core so.
        self._remake = None if lateness is not None or seconds is None else (
            lambda: _core._Window(n, d, 0.0, bool(exact), fpr or 0.0, generations, seed))

    # ---- checking and recording ----

    def _time_of(self, time: Optional[float]) -> float:
        if self._records is not None:
            if time is not None:
                raise ValueError("a count window takes no time")
            return 0.0
        timed = time is not None
        if self._timed is not None and self._timed != timed:
            raise ValueError(self._mixing())
        if not timed and self._timed is None:
            self._arrival_starts()
        if timed:
            stamp = getattr(time, "timestamp", None)  # datetime.datetime (aware: UTC; naive: local)
            if callable(stamp) and not isinstance(time, (int, float)):
                return float(stamp())
            if isinstance(time, bool) or not isinstance(time, (int, float)):
                raise TypeError(f"time must be a number of seconds or a datetime, not {type(time).__name__}")
            return float(time)
        return float(self._clock())

    def _arrival_starts(self) -> None:
        if self._remake is not None and self._w.processed == 0:
            self._w = self._remake()
        self._remake = None

    def _mixing(self) -> str:
        return ("this window was given event times: give a time with every key" if self._timed
                else "this window runs on arrival time (its first call gave no time): give no times")

    def seen(self, key: Any, time: Optional[float] = None) -> bool:
        """Whether `key` occurred within the window, and records it (the window advances by one
        record). A late record returns False (it is kept) and counts in :attr:`late`."""
        if time is None and self._records is not None:  # a count window: the common call, short
            return self._w.see(key, 0.0) == _DUPLICATE
        if self._timed and type(time) is float:  # an event-time window, after its first call
            return self._w.see(key, time) == _DUPLICATE
        t = self._time_of(time)
        verdict = self._w.see(key, t)
        if self._records is None:
            self._timed = time is not None
        return verdict == _DUPLICATE

    def seen_many(self, keys: Any, times: Any = None) -> Any:
        """:meth:`seen` for each key in order: a NumPy bool array, the same answers as the loop
        of scalar calls. `keys`: anything :meth:`cuckoo.Filter.add_many` takes; `times`: one
        time a key (a float array), for an event-time window. Bad keys or times raise before
        anything is recorded. Runs without the GIL."""
        return self._verdicts(keys, times) == _DUPLICATE

    def keep_many(self, keys: Any, times: Any = None) -> Any:
        """The complement of :meth:`seen_many`: True for each record to keep (new or late)."""
        return self._verdicts(keys, times) != _DUPLICATE

    def _verdicts(self, keys: Any, times: Any) -> Any:
        import numpy as np

        if self._records is not None:
            if times is not None:
                raise ValueError("a count window takes no times")
            return self._w.see_many(keys, None)
        timed = times is not None
        if self._timed is not None and self._timed != timed:
            raise ValueError(self._mixing())
        if not timed and self._timed is None:
            self._arrival_starts()
        if timed:
            arr = np.asarray(times)
            if arr.dtype.kind == "M":  # datetime64: seconds since the epoch (NaT is refused as NaN)
                t = arr.astype("datetime64[ns]").astype(np.int64) / 1e9
                t[np.isnat(arr)] = np.nan
            elif arr.dtype.kind in "iuf":
                t = np.ascontiguousarray(arr, dtype=np.float64)
            else:
                raise TypeError(f"times must be numbers of seconds or datetime64, not an array of dtype {arr.dtype}")
            out = self._w.see_many(keys, t)
        else:
            # One arrival time for the whole batch: the batch arrived at once.
            now = float(self._clock())
            out = self._w.see_many(keys, now)  # a float: every key's time
        self._timed = timed
        return out

    # ---- statistics ----

    def __len__(self) -> int:
        """Keys held (a key in two generations counts twice)."""
        return self._w.entries

    @property
    def nbytes(self) -> int:
        """Bytes of memory the window holds (its sets or filters, and their bookkeeping)."""
        return self._w.memory_bytes

    memory = nbytes

    @property
    def records(self) -> Optional[int]:
        """The count window's N (None for a time window)."""
        return self._records

    @property
    def seconds(self) -> Optional[float]:
        """The time window's D (None for a count window)."""
        return self._seconds

    @property
    def lateness(self) -> Optional[float]:
        """Time windows: how far behind the largest time seen a record may be and still count."""
        return None if self._seconds is None else self._w.lateness

    @property
    def exact(self) -> bool:
        return self._exact

    @property
    def fpr(self) -> Optional[float]:
        return self._fpr

    @property
    def fpr_bound(self) -> float:
        """Approximate windows: the bound on the chance that a key not within one generation
        beyond the window is called seen (the sum of the live filters' rates); 0.0 if exact."""
        return self._w.fpr_bound

    @property
    def processed(self) -> int:
        """Records seen so far (late ones too)."""
        return self._w.processed

    @property
    def duplicates(self) -> int:
        """Records found to be duplicates."""
        return self._w.duplicates

    @property
    def late(self) -> int:
        """Time windows: records behind the watermark, kept and not remembered."""
        return self._w.late

    @property
    def generations(self) -> int:
        """Generations held now."""
        return self._w.generations

    @property
    def watermark(self) -> Optional[float]:
        """Time windows: the largest time seen minus the lateness (None before the first record)."""
        w = self._w.watermark
        return None if self._seconds is None or math.isnan(w) else w

    def __repr__(self) -> str:
        if self._records is not None:
            what = f"records={self._records:_}"
        else:
            what = f"seconds={self._seconds:g}, lateness={self._w.lateness:g}"
        mode = "exact=True" if self._exact else f"fpr={self._fpr:g}"
        text = (f"<cuckoo.Window({what}, {mode}): {self.processed:_} records, {self.duplicates:_} duplicates"
                + (f", {self.late:_} late" if self._seconds is not None else "")
                + f"; holds {len(self):_} keys in {self.generations} generations, {_size(self.nbytes)}")
        if self._seconds is not None and self.watermark is not None:
            text += f"; watermark {self.watermark:g}"
        return text + ">"

    def __reduce__(self) -> Any:
        raise TypeError("a cuckoo.Window cannot be pickled (its state is a stream's recent past)")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"
