"""Running test code in several threads at once (used by the thread-safety tests)."""

from __future__ import annotations

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
