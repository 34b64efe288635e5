"""``cuckoo demo``: a one-minute tour on generated data."""

from __future__ import annotations

import argparse
import io
import sys
import time
from typing import Any, Callable, List, Tuple

from cuckoo._numpy import np

import cuckoo
from cuckoo import Filter

from .common import DEDUP_FPR, DEFAULT_BLOCK, EXIT_OK
from cuckoo._dedup.sources import Source, read_lines
from .output import _bytes, _si, write_stdout


# ---- demo ------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> Tuple[Any, float]:
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def _set_bytes(items: List[Any]) -> int:
    """sys.getsizeof of a set of `items` plus that of each element."""
    s = set(items)
    return sys.getsizeof(s) + sum(map(sys.getsizeof, s))


def _text_lines(ids: np.ndarray) -> bytes:
    """'user-<10 digits>\\n' for each id, built with NumPy (no Python loop per line)."""
    prefix = np.frombuffer(b"user-", dtype=np.uint8)
    digits = 10
    rows = np.empty((len(ids), len(prefix) + digits + 1), dtype=np.uint8)
    rows[:, : len(prefix)] = prefix
    v = ids.astype(np.uint64)
    for j in range(digits - 1, -1, -1):
        rows[:, len(prefix) + j] = (v % 10).astype(np.uint8) + 48
        v //= 10
    rows[:, -1] = 10
    return rows.tobytes()


def cmd_demo(args: argparse.Namespace) -> int:
    n = args.size
    rng = np.random.default_rng(args.seed)
    total_t0 = time.perf_counter()

    def w(text: str = "") -> None:
        write_stdout(text + "\n", flush=True)

    w(f"cuckoo {cuckoo.__version__} demo: {n:,} random 64-bit keys, then {n:,} text lines to dedup "
      f"(generated in memory, seed {args.seed})")
    # The timings below depend on it (cuckoo.cpu_level(); CUCKOO_CPU chooses another).
    w(f"kernel level {cuckoo.cpu_level()} (this CPU runs {', '.join(cuckoo.cpu_levels())})")
    w()

    # 1. integer keys: build, look up, false positives
    present = rng.integers(0, 2**63, size=n, dtype=np.uint64) << np.uint64(1)  # even numbers
    absent = present | np.uint64(1)  # odd numbers: never added
    f = Filter(n, fpr=args.fpr)
    _, t_add = _timed(lambda: f.add_many(present))
    hits, t_hit = _timed(lambda: f.contains_many(present))
    fps, t_miss = _timed(lambda: f.contains_many(absent))
    n_fp = int(np.count_nonzero(fps))
    missing = n - int(np.count_nonzero(hits))
    w(f"Filter({n:_}, fpr={args.fpr:g}): {f.fingerprint_bits}-bit fingerprints, {f.bucket_size} slots per bucket, "
      f"{_bytes(f.nbytes)}, load {f.load_factor:.1%} after adding them all")
    w(f"  {'bulk call on a NumPy uint64 array':<36}{'keys/s':>9}{'ns/key':>9}")
    for name, t in (("add_many", t_add), ("contains_many, the added keys", t_hit),
                    ("contains_many, absent keys", t_miss)):
        w(f"  {name:<36}{_si(n / t):>9}{t * 1e9 / n:>9.1f}")
    w(f"  false negatives: {missing} of {n:,} added keys" + ("" if missing else " (there never are)"))
    w()

    sample = min(n, args.set_sample)
    set_per_key = _set_bytes(present[:sample].tolist()) / sample
    scaled = "" if sample == n else f", measured on {sample:,} keys and scaled"
    w(f"  memory     filter {_bytes(f.nbytes)} ({f.nbytes * 8 / n:.1f} bits/key) vs Python set "
      f"{_bytes(set_per_key * n)} ({set_per_key * 8:.0f} bits/key): {set_per_key * n / f.nbytes:.0f}x smaller")
    w(f"             (set = sys.getsizeof of the set and of each int{scaled})")
    w(f"  false +    measured {n_fp / n:.3g} ({n_fp:,} of {n:,} absent keys) vs theory {f.expected_fpr:.3g} "
      f"at this load (bound when full: {f.fpr_bound:.3g})")
    w()

    # 2. dedup of a text stream with duplicates, through the same code as `cuckoo dedup`
    ids = rng.integers(0, max(n // 2, 1), size=n)
    text = _text_lines(ids)
    del present, absent, hits, fps
    exact = int(len(np.unique(ids)))
    g = Filter(n, fpr=DEDUP_FPR)
    written = out_bytes = 0
    expected_false = 0.0
    t0 = time.perf_counter()
    fpr_before = g.expected_fpr
    src = Source("<generated>")
    src.stream = io.BytesIO(text)
    for lines in read_lines(src, DEFAULT_BLOCK):
        mask = lines.apply(g.add_unique_many, bool)
        kept = int(np.count_nonzero(mask))
        fpr_after = g.expected_fpr
        expected_false += kept * 0.5 * (fpr_before + fpr_after)
        fpr_before = fpr_after
        out_bytes += len(lines.select(mask, final=True))
        written += kept
    t_dedup = time.perf_counter() - t0
    line_len = len(text) // n
    sample = min(exact, args.set_sample)
    set_lines = _set_bytes(text[: sample * line_len].split(b"\n")[:sample]) / sample * exact
    w(f"Streaming dedup of {n:,} lines like b'user-0001234567' ({_bytes(len(text))}, {exact:,} distinct), "
      f"the code path of `cuckoo dedup`:")
    w(f"  {_si(n / t_dedup)} lines/s ({t_dedup * 1e9 / n:.0f} ns/line, {len(text) / t_dedup / 2**20:.0f} MiB/s); "
      f"filter {_bytes(g.nbytes)} vs a Python set of the distinct lines {_bytes(set_lines)}")
    w(f"  kept {written:,} of {exact:,} distinct lines: {exact - written:,} wrongly dropped "
      f"(expected {expected_false:.3g} at --fpr {DEDUP_FPR:g}; lower it to drop fewer)")
    w()
    w(f"done in {time.perf_counter() - total_t0:.1f} s. Next: cuckoo dedup --help")
    return EXIT_OK
