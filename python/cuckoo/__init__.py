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
"""

from __future__ import annotations

try:
    from ._core import (
        CuckooError,
        Filter,
        FilterFullError,
        FormatError,
        ReadOnlyError,
        StoreForkedError,
        StoreLockedError,
    )
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "cuckoo's compiled extension cuckoo._core could not be imported. Install the package "
        "with `pip install .` (a plain checkout on sys.path has no compiled extension)."
    ) from exc

from . import _display, _lifecycle, _persist
from .store import RecoveryWarning, Store

_lifecycle.install(Filter)
_display.install(Filter)
_persist.install(Filter)

__version__ = "0.2.0"

__all__ = [
    "CuckooError",
    "Filter",
    "FilterFullError",
    "FormatError",
    "ReadOnlyError",
    "RecoveryWarning",
    "Store",
    "StoreForkedError",
    "StoreLockedError",
    "__version__",
]
