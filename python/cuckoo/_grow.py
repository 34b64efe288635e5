"""Turning a fixed filter into a growable one (used by the CLI's resume and cuckoo.dask)."""

from __future__ import annotations

from typing import Optional

from ._core import Filter


def growable_version(f: Filter) -> Optional[Filter]:
    """A growable filter that answers exactly like the fixed filter ``f`` (``f`` itself if it is
    growable already): ``f``'s table becomes its first stage, so it can take more keys than ``f``
    was sized for. None if ``f``'s parameters cannot be rebuilt (a file whose capacity does not
    give its bucket count)."""
    if f.growable:
        return f
    stage = f.stages[0]
    g = Filter(stage["capacity"], fingerprint_bits=f.fingerprint_bits, bucket_size=f.bucket_size,
               max_kicks=f.max_kicks, seed=f.seed, hash_algorithm=f.hash_algorithm, semi_sort=f.semi_sort,
               growable=True)
    if g.bucket_count != f.bucket_count:
        return None
    # `+` puts each stored fingerprint (with its count) into the same bucket pair of the same
    # geometry: the copies are exactly f's entries (a growable filter keeps a stage of its own
    # rather than fail if one finds no room).
    g += f
    return g
