"""cuckoo: a fast, compact cuckoo filter with a C++ core, and an exact store on the same hashing.

    >>> import cuckoo
    >>> f = cuckoo.Filter(1_000_000, fpr=0.001)
    >>> f.add("hello")
    >>> "hello" in f
    True

Keys are ``int`` (64-bit), ``bytes`` or ``str`` (hashed as UTF-8). Bulk methods
(``add_many``, ``add_unique_many``, ``contains_many``, ``discard_many``,
``count_many``) take NumPy arrays, Arrow arrays, pandas Series, lists and other
iterables, and return NumPy arrays.

``cuckoo.Store`` is the exact counterpart: a persistent mapping of keys to bytes on a cuckoo
index over an append-only log (no false positives; ``add_unique_many`` is exact dedup).

The bulk kernels run at the best level the CPU has (``cuckoo.cpu_level()``: ``"portable"``,
``"avx2"`` or ``"avx512"``; ``cuckoo.cpu_levels()`` lists the levels this CPU can run). The
environment variable ``CUCKOO_CPU`` chooses another, read once at import: an unknown value makes
``import cuckoo`` raise ``ImportError`` (the ``cuckoo`` command: one line, exit 1); a level this CPU lacks gives a ``RuntimeWarning`` and
the best level it has runs instead. Every level gives the same results.
"""

from __future__ import annotations

import os
import sys

try:
    from ._core import (
        CuckooError,
        Filter,
        FilterFullError,
        FormatError,
        ReadOnlyError,
        StoreForkedError,
        StoreLockedError,
        cpu_level,
        cpu_levels,
    )
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "cuckoo's compiled extension cuckoo._core could not be imported. Install the package "
        "with `pip install .` (a plain checkout on sys.path has no compiled extension)."
    ) from exc

from . import _core, _display, _inputs, _lifecycle, _persist
from .store import RecoveryWarning, Store
from .window import Window


def _running_the_command_line() -> bool:
    """True when this import starts the ``cuckoo`` command (its console script, or ``python -m
    cuckoo``), not a program that uses the package."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    if argv0 in ("cuckoo", "cuckoo.exe"):
        return True
    orig = getattr(sys, "orig_argv", [])
    return "-m" in orig[:-1] and orig[orig.index("-m") + 1] == "cuckoo"


def _check_cpu_request() -> None:
    # The core read CUCKOO_CPU (cpp/include/cuckoo/cpu.hpp) and ran the detected level if it
    # could not obey; say so here, where Python can.
    value, status = _core._cpu_level_request()
    if status == "unknown":
        message = f"CUCKOO_CPU={value!r} is not a kernel level: use portable, avx2 or avx512, or unset it"
        if _running_the_command_line():
            # The command line reports its errors as one line and an exit code of its table
            # (cuckoo._dedup.errors: 1, usage): it cannot catch this itself, since importing
            # cuckoo.cli runs this package first.
            sys.stderr.write(f"cuckoo: {message}\n")
            raise SystemExit(1)
        raise ImportError(message)
    if status == "unsupported":
        import warnings

        warnings.warn(f"CUCKOO_CPU={value!r}: this CPU cannot run that kernel level; running {cpu_level()!r} "
                      f"(it can run {', '.join(cpu_levels())})", RuntimeWarning, stacklevel=2)


_check_cpu_request()

# The core reads pandas and pyarrow inputs through this adapter; it never imports the package.
_core._set_input_adapter(_inputs.batch_parts)
_lifecycle.install(Filter)
_display.install(Filter)
_persist.install(Filter)

__version__ = "0.2.0"

# Last: the dedup engine (cuckoo._dedup.engine) imports this package's names above.
from ._dedup import DedupResult, dedup  # noqa: E402

__all__ = [
    "CuckooError",
    "DedupResult",
    "Filter",
    "FilterFullError",
    "FormatError",
    "ReadOnlyError",
    "RecoveryWarning",
    "Store",
    "StoreForkedError",
    "StoreLockedError",
    "Window",
    "__version__",
    "cpu_level",
    "cpu_levels",
    "dedup",
]
