"""``Filter.__init__`` that runs once per object.

pybind11 skips ``__init__`` on an object whose C++ filter already exists (a C++ constructor
cannot run twice), so ``f.__init__(10)`` on a live filter would return without a word and keep
the old filter. Installed by ``install``, the public ``__init__`` raises TypeError instead and
hands a new object to the compiled constructor.
"""

from __future__ import annotations

import functools
from typing import Any

from . import _core


def install(cls: type) -> None:
    construct = cls.__init__

    @functools.wraps(construct)  # keeps the compiled constructor's signature docstring
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _core._filter_is_built(self):
            raise TypeError("Filter.__init__() called on a filter that is already initialised: create a new Filter instead")
        construct(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
