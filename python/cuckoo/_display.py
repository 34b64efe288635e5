"""Text and HTML representations of a Filter (``repr`` and Jupyter's ``_repr_html_``)."""

from __future__ import annotations

from typing import Any, List, Tuple


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"  # pragma: no cover


def _rows(f: Any) -> List[Tuple[str, str]]:
    return [
        ("items", f"{len(f):,} of capacity {f.capacity:,}"),
        ("load factor", f"{f.load_factor:.1%} of {f.slot_count:,} slots"),
        ("fingerprint", f"{f.fingerprint_bits} bits"),
        ("buckets", f"{f.bucket_count:,} \u00d7 {f.bucket_size} slots" + (", semi-sorted" if f.semi_sort else "")),
        ("memory", f"{_size(f.nbytes)} ({f.bits_per_item:.1f} bits per item at capacity)"),
        ("expected FPR", f"{f.expected_fpr:.3g} now, bound {f.fpr_bound:.3g} at full load"),
        ("seed, max_kicks", f"{f.seed}, {f.max_kicks}"),
    ] + ([("growth", f"growable, {len(f.stages)} stage(s)")] if f.growable else []) + (
        [("access", "read-only (memory-mapped)")] if f.read_only else []
    )


def filter_repr(f: Any) -> str:
    ro = ", read-only" if f.read_only else ""
    return (
        f"<cuckoo.Filter {len(f):,}/{f.capacity:,} items, load {f.load_factor:.1%}, "
        f"f={f.fingerprint_bits} b={f.bucket_size}{' semi-sorted' if f.semi_sort else ''}, {_size(f.nbytes)}, "
        f"expected FPR {f.expected_fpr:.3g}{ro}>"
    )


def filter_repr_html(f: Any) -> str:
    import html  # imported here: start-up of cuckoo dedup

    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
        for k, v in _rows(f)
    )
    return f"<table><caption style='text-align:left'><b>cuckoo.Filter</b></caption>{rows}</table>"


def install(cls: type) -> None:
    cls.__repr__ = filter_repr  # type: ignore[assignment]
    cls._repr_html_ = filter_repr_html  # type: ignore[attr-defined]
