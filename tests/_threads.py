"""Running test code in several threads at once, and telling whether a call releases the GIL
(used by the thread-safety tests)."""

from __future__ import annotations

import sys
import threading
from typing import Callable, List


def run_threads(targets: List[Callable[[], None]]) -> None:
    """Runs every target in its own thread, started together; re-raises the first error."""
    errors: List[BaseException] = []
    start = threading.Barrier(len(targets))

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                fn()
            except BaseException as e:  # noqa: BLE001 - reported to the main thread
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
        assert not t.is_alive(), "a thread did not finish: deadlock?"
    if errors:
        raise errors[0]


class ProgressCounter:
    """A thread counting its iterations while `in_call` is set. Each iteration ends in
    time.sleep(0), which releases the GIL: the thread never blocks another thread's GIL
    re-acquisition (the main thread re-takes the GIL for signal checks during bulk calls)."""

    def __init__(self) -> None:
        self.in_call = False
        self.during = 0
        self._stop = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import time

        self._ready.set()
        while not self._stop:
            if self.in_call:
                self.during += 1
            time.sleep(0)

    def __enter__(self) -> "ProgressCounter":
        self._old_interval = sys.getswitchinterval()
        sys.setswitchinterval(1000.0)  # no forced GIL hand-over during the test
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self._thread.join()
        sys.setswitchinterval(self._old_interval)

    def progress_during(self, call) -> int:
        """Iterations the counter ran while call() was running."""
        start = self.during
        self.in_call = True
        try:
            call()
        finally:
            self.in_call = False
        return self.during - start


MIN_PROGRESS = 100  # counter iterations; a GIL-holding call allows exactly 0


def run_until_progress(counter: ProgressCounter, call, max_calls: int = 8) -> int:
    progress = 0
    for _ in range(max_calls):
        progress += counter.progress_during(call)
        if progress >= MIN_PROGRESS:
            break
    return progress
