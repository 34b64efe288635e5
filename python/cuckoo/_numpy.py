"""NumPy, imported on first use.

`import cuckoo` and the command line's text paths (``cuckoo dedup FILE``: the native pipeline)
need no NumPy, and importing it is most of their start-up: about 0.2 s on a 2-vCPU Xeon
(Skylake-SP, 2026-11-27; ``python -c "import numpy"`` 0.21-0.27 s against 0.02 s for an empty
interpreter), which is a tenth of deduplicating 500 MB, and its OpenBLAS start-up spins threads
on the cores the pipeline runs on. The modules on those import paths take ``np`` from here: the
first attribute read imports NumPy and copies that attribute into the proxy's own ``__dict__``,
so later reads of it cost what a module attribute costs. Keeping the proxy out of
``sys.modules`` leaves other packages' ``import numpy`` as it was.
"""

from __future__ import annotations

from typing import Any


class _LazyNumPy:
    def __getattr__(self, name: str) -> Any:  # only called for names not yet in __dict__
        import numpy

        value = getattr(numpy, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return "<NumPy, imported on first use (cuckoo._numpy)>"


np: Any = _LazyNumPy()
