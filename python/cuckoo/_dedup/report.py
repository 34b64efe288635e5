"""Number formats of the dedup reports, and the progress line on stderr."""

from __future__ import annotations

import sys
import time


def _si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.1f}{unit}"
    return f"{x:.0f}"


def _small(x: float) -> str:
    return f"{x:.3g}" if x >= 0.001 else "< 0.001"


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


class Progress:
    """A one-line, self-overwriting progress counter on stderr (lines, lines/s, bytes)."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = label
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def update(self, lines: int, nbytes: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < 0.25:
            return
        self.last = now
        dt = max(now - self.start, 1e-9)
        sys.stderr.write(f"\r{self.label}: {lines:,} lines, {_bytes(nbytes)}, {_si(lines / dt)} lines/s   ")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 78 + "\r")
            sys.stderr.flush()
