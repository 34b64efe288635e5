"""Key-count estimation: the distinct lines of the input, from samples of regular files or
the first blocks of a pipe, to size a filter (or a store's index) before the first line."""

from __future__ import annotations

import collections
import math
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from cuckoo import Filter, _core

from .sources import Source


# A sampled piece of input: (its bytes, it starts the input, it ends the input); the lines in it
# are counted by _core._sample_counts (cpp/include/cuckoo/line_sample.hpp).
Window = Tuple[bytes, bool, bool]

# Sampling a regular file to estimate its distinct lines: this many windows of SAMPLE_WINDOW bytes,
# and more (up to MAX_SAMPLE_WINDOWS) when they hold fewer than MIN_SAMPLE_LINES lines. Chao's
# estimate has a relative error of about 1/sqrt(f2): 16 windows of 56-byte lines (18,700 lines,
# ~40 pairs) said 3.9 M for 4.3 M distinct with one seed and 8.8 M with another; 43 windows
# (50,000 lines, ~230 pairs) said 5.4 M, 64 windows 5.3 M (Chao's estimate of the 5 M ids the
# lines are drawn from). A window costs ~0.2 ms.
SAMPLE_WINDOWS = 16
MAX_SAMPLE_WINDOWS = 64
MIN_SAMPLE_LINES = 50_000
SAMPLE_WINDOW = 1 << 16


# ---- sizing and filters ----------------------------------------------------------------------


# Keys seen exactly twice in a sample before Chao's estimate caps N f1/n (its relative error is
# about 1/sqrt(f2)).
CHAO_MIN_PAIRS = 10
# The weight of the upper bound N f1/n + (d - f1) against GEE in the estimate of a sample whose
# head of common keys hides its tail (distinct_estimate).
UPPER_WEIGHT = 2.0 / 3.0
# A sample whose rare keys (seen at most 10 times) have frequencies this even or more (ACE's squared
# coefficient of variation, Chao and Lee 1992, at most this) is one of keys that repeat alike.
HOMOGENEOUS_CV2 = 0.2


def distinct_estimate(sample: List[bytes], total_lines: float, complete: bool) -> float:
    """Distinct keys of an input of about `total_lines` lines from a sample of its keys (all of
    them when `complete`). The largest of: the distinct keys seen; Chao and Charikar's GEE,
    sqrt(N/n) f1 + (d - f1) (f1 keys seen once, f2 twice, d seen at all), whose ratio error is
    bounded by sqrt(N/n); and N f1/n (a sample of mostly single keys says the input is mostly
    distinct), capped by Chao's bias-corrected estimate d + f1 (f1 - 1) / (2 (f2 + 1)) once keys
    repeat inside the sample (f2 >= CHAO_MIN_PAIRS, so that it is not noise): a small sample of an input whose keys repeat a few times each is
    mostly single keys too, and N f1/n then said 9.9 M for 10^7 lines of 4.3 M distinct (the
    filter twice the size, out of cache), where Chao's says 4.9-8.8 M. But Chao's estimate is a
    lower bound, and it collapses where a heavy head of common keys supplies the repeated pairs
    while a long tail stays unseen (real text: blank lines and markup repeat, most lines occur once
    or twice): on the machine's own text (19.3 M lines, 3.2 M distinct) it said 0.13 M and the
    filter grew through 4 stages, 11% slower than one sized right. So the cap is never below a
    weighted geometric mean of GEE and the upper bound N f1/n + (d - f1), GEE^(1/3) upper^(2/3)
    (UPPER_WEIGHT): the truth lies between them, and an estimate below it costs more than one above
    it. Their plain geometric mean (the least worst-case ratio error) said 1.95 M on that text,
    and 1.19 M for a Zipf head over 2.02 M keys seen twice each (test_cli.py), 0.6x the truth
    both times: a growable filter then grew a second stage, which every later insert also looks
    up (the text's filter took more memory in its two stages, 7.0 M slots, than one sized for
    the truth), and the exact key set's index grew, holding its old and new tables at once. The
    weighted mean said 3.2 M and 1.85 M there. Never more than the lines. But a sample whose keys repeat alike (rare_cv2 at most HOMOGENEOUS_CV2:
    keys drawn again and again from a pool of about equally common ones) has no unseen tail, and
    Chao's estimate alone stands there: 10^7 lines of 5*10^5 ids, about 20 each, were sized for
    2.9 M by the geometric mean. (Chao's estimate is then that of the pool, ~1.16x the 4.3 M
    distinct lines of 10^7 draws of 5 M ids: an overestimate, the cheaper side.) An
    underestimate costs a growable filter a stage a doubling, the exact key set an index
    growth; an overestimate, memory."""
    if complete or not sample:
        return float(len(set(sample)))
    counts = collections.Counter(sample)
    frequencies = collections.Counter(counts.values())
    return estimate_from_counts(len(sample), len(counts), frequencies[1], frequencies[2], total_lines,
                                tuple(frequencies[k] for k in range(1, RARE_MAX + 1)))


# The rare keys of a sample: those seen at most this many times (_core._sample_counts' `seen`, whose
# length the core sets).
RARE_MAX: int = _core._SAMPLE_RARE_MAX


def rare_cv2(seen: Sequence[int]) -> float:
    """ACE's estimate of the squared coefficient of variation of the rare keys' frequencies
    (Chao and Lee 1992), from seen[k - 1], the keys seen exactly k times (k = 1..RARE_MAX): about
    0 for keys that all repeat alike, 1 and more for a heavy head over a tail (real text). Infinite
    when the rare keys say nothing (none of them repeats)."""
    f1 = seen[0] if seen else 0
    s_rare = sum(seen)
    n_rare = sum(k * f for k, f in enumerate(seen, 1))
    if n_rare <= 1 or f1 >= n_rare:
        return math.inf
    coverage = 1.0 - f1 / n_rare
    pairs = sum(k * (k - 1) * f for k, f in enumerate(seen, 1))
    return max(s_rare / coverage * pairs / (n_rare * (n_rare - 1.0)) - 1.0, 0.0)


def estimate_from_counts(n: int, d: int, f1: int, f2: int, total_lines: float,
                         seen: Optional[Sequence[int]] = None) -> float:
    """distinct_estimate from the sample's counts: n keys, d distinct, f1 seen once, f2 twice;
    seen (optional): the keys seen exactly k times, k = 1..RARE_MAX."""
    if n == 0:
        return 0.0
    scale = max(total_lines / n, 1.0)
    gee = math.sqrt(scale) * f1 + (d - f1)
    mostly_distinct = total_lines * f1 / n
    most = max(total_lines, float(d))
    if f2 >= CHAO_MIN_PAIRS:
        chao = d + f1 * (f1 - 1) / (2.0 * (f2 + 1))
        if seen is not None and rare_cv2(seen) <= HOMOGENEOUS_CV2:  # keys that repeat alike
            return min(max(float(d), min(mostly_distinct, chao)), most)
        upper = total_lines * f1 / n + (d - f1)
        mostly_distinct = min(mostly_distinct, max(chao, gee ** (1.0 - UPPER_WEIGHT) * upper ** UPPER_WEIGHT))
    return min(max(float(d), gee, mostly_distinct), most)


# Seconds a pipe may pause while the estimate reads its head before the run starts without the
# rest of it (sized as for input of unknown size): the lines of a live stream come out at once.
PIPE_PATIENCE = 0.25


def estimate_keys(sources: List[Source], block: int, record_end: bytes = b"\n") -> Tuple[int, bool]:
    """An estimate of the distinct keys (lines) of the input, and whether it is an estimate at
    all (False when a source is a pipe longer than two blocks). Regular files are sampled in
    SAMPLE_WINDOWS windows (read whole when small); stdin is read up to two blocks ahead.
    `record_end`: the byte lines end at (b"\0" with ``-z``)."""
    estimate = estimate_input(sources, block, record_end)
    return estimate.keys, estimate.known


class InputEstimate(NamedTuple):
    """What the sample says of the input: `keys`, its distinct lines (estimated; exact when the
    sample was all of it), `known` (False: a pipe longer than two blocks, nothing is known),
    `lines` (estimated; 0 when unknown), and `mean_key_bytes`, the mean length of its distinct
    keys (0.0 when unknown), with which the exact path plans its memory."""

    keys: int
    known: bool
    lines: float
    mean_key_bytes: float


def mean_distinct_key_bytes(keys: float, d: int, f1: int, distinct_bytes: int, once_bytes: int,
                            complete: bool) -> float:
    """The mean length of the input's `keys` distinct keys, from a sample of d distinct keys of
    distinct_bytes bytes, f1 of them seen once (once_bytes bytes). The keys the sample saw more
    than once are known; the others, seen once or not at all, are taken to be as long as those
    seen once (a key's chance to be sampled grows with its count, not its length). The mean line
    would not do: in real text the repeated lines are short (blank, a brace, a common import) and
    the distinct ones long, 30.4 against 51.1 bytes in the benchmark's text, so that the exact path
    planned 5 passes over it for a 32 MiB budget and needed 10."""
    if d == 0:
        return 0.0
    if complete or f1 == 0:
        return distinct_bytes / d
    repeated = d - f1
    others = max(keys - repeated, float(f1))
    return (distinct_bytes - once_bytes + others * (once_bytes / f1)) / (repeated + others)


# NUL-terminated records (-z) are sampled as lines: the sample's NULs and newlines swap places,
# so that the line counter (_core._sample_counts) counts records (a '\r' before a NUL is then
# left out of a key's length, a difference of a byte in an estimate).
_SWAP_NUL_AND_NEWLINE = bytes.maketrans(b"\n\0", b"\0\n")


def estimate_input(sources: List[Source], block: int, record_end: bytes = b"\n") -> InputEstimate:
    """estimate_keys, the estimated number of lines (0 when unknown) and the distinct keys' mean
    length (an InputEstimate)."""
    if record_end != b"\n":
        return _estimate_input(sources, block, record_end, _SWAP_NUL_AND_NEWLINE)
    return _estimate_input(sources, block, record_end, None)


def _estimate_input(sources: List[Source], block: int, record_end: bytes, swap: Optional[bytes]) -> InputEstimate:
    def as_lines(window: Window) -> Window:
        return window if swap is None else (window[0].translate(swap), window[1], window[2])

    windows: List[Window] = []
    total = 0.0
    complete = True
    for src in sources:
        size = src.regular_size()
        if size is not None and src.path is not None:
            try:
                file_windows, lines = _sample_file(src.path, size, record_end)
            except OSError as exc:
                raise src.input_error(exc) from None
            file_windows = [as_lines(w) for w in file_windows]
            windows.extend(file_windows)
            if lines is None:  # read whole: its lines are all in the sample
                lines = _core._sample_counts(file_windows)[0]
            else:
                complete = False
            total += lines
            continue
        # stdin or a pipe: read two blocks ahead (less from a pipe that pauses: PIPE_PATIENCE);
        # if that was all of it, count exactly; if it is a regular file (`< big.txt`), scale the
        # sample by its size; else the size is unknown.
        head = src.read_head(2 * block, PIPE_PATIENCE)
        if head:
            src.pushed.append(head)
        window = as_lines((head, True, src.eof))
        if not src.eof:
            if size is None:
                return InputEstimate(0, False, 0.0, 0.0)
            complete = False
            total += size / max(len(head) / max(head.count(record_end), 1), 1.0)
        else:
            total += _core._sample_counts([window])[0]
        windows.append(window)
    n, d, f1, f2, seen, distinct_bytes, once_bytes = _core._sample_counts(windows)
    estimate = float(d) if complete else estimate_from_counts(n, d, f1, f2, total, seen)
    return InputEstimate(int(math.ceil(estimate)), True, total,
                         mean_distinct_key_bytes(estimate, d, f1, distinct_bytes, once_bytes, complete))


def _sample_file(path: str, size: int, record_end: bytes = b"\n") -> Tuple[List[Window], Optional[float]]:
    """(sampled windows of the file, its estimated lines): the whole file as one window (lines
    None: they are all in the sample) when it is at most SAMPLE_WINDOWS windows, else
    SAMPLE_WINDOWS windows spread evenly over it. Raises OSError."""
    with open(path, "rb") as fh:
        if size <= SAMPLE_WINDOWS * SAMPLE_WINDOW:
            return [(fh.read(), True, True)], None
        count = SAMPLE_WINDOWS
        while True:
            windows: List[Window] = []
            nbytes = newlines = 0
            for k in range(count):
                off = (size - SAMPLE_WINDOW) * k // (count - 1)
                fh.seek(off)
                piece = fh.read(SAMPLE_WINDOW)
                nbytes += len(piece)
                newlines += piece.count(record_end)
                windows.append((piece, off == 0, off + len(piece) >= size))
            # Too few lines (long ones) for a steady estimate: again, with enough windows for
            # MIN_SAMPLE_LINES at this density, if the file has room for them.
            wanted = min(MAX_SAMPLE_WINDOWS, math.ceil(count * MIN_SAMPLE_LINES / max(newlines, 1)),
                         size // SAMPLE_WINDOW)
            if newlines >= MIN_SAMPLE_LINES or wanted <= count:
                break
            count = wanted
    return windows, size / max(nbytes / max(newlines, 1), 1.0)


# Capacity for input whose size cannot be known in advance (a pipe longer than one block) when
# the filter cannot grow: about 85 MiB of table at the default dedup FPR.
STDIN_CAPACITY = 50_000_000
MIN_CAPACITY = 1024
# Initial capacity of a growable filter for input of unknown size.
GROWABLE_START = 1 << 20


def vector_bucket_size(fpr: float) -> int:
    """The bucket size for a filter that a dedup run fills: 4 slots, unless their fingerprint
    width at `fpr` makes a bucket that one 8-byte load cannot hold (b*f a multiple of 8 up to 64,
    or b*f + 7 <= 64: the table's Aligned and OneLoad shapes, which the vector insert kernel
    takes) and 2 slots would. At the default 1e-4: 4 x 17 bits take the scalar multi-word path,
    2 x 16 bits the vector one, at the same bound (2b/2^f = 6.1e-5) and ~7% more memory a key
    (2-slot buckets fill to ~84%, not 95%). Measured (Zen 4, AVX-512 level, add_unique_many of
    10^7 keys, 4.3 M distinct, 12 M capacity, load 2.2): 74 ns a key at 4 x 17, 36 at 2 x 16."""
    from cuckoo.theory import fingerprint_bits

    def one_load(b: int) -> bool:
        bits = b * fingerprint_bits(fpr, b)
        return (bits % 8 == 0 and bits <= 64) or bits + 7 <= 64

    return 2 if not one_load(4) and one_load(2) else 4


def new_filter(capacity: int, fpr: float, growable: bool, seed: Any = None,
               expansion: Optional[int] = None, bucket_size: int = 4) -> Tuple[Filter, bool]:
    """A filter of `capacity` keys; a growable one when asked and this build supports it (its
    stages growing by `expansion`, default 2). `seed` None: a secret random seed (stored in the
    filter)."""
    if growable:
        try:
            return (Filter(capacity, fpr, growable=True, seed=seed, expansion=expansion,  # type: ignore[call-arg]
                           bucket_size=bucket_size), True)
        except TypeError:
            pass  # this build has no growable filters
    return Filter(capacity, fpr, seed=seed, bucket_size=bucket_size), False


def sized_filter(sources: List[Source], block: int, fpr: float, seed: Any = None, capacity: Optional[int] = None,
                 expansion: Optional[int] = None, bucket_size: int = 4,
                 record_end: bytes = b"\n") -> Tuple[Filter, bool, str]:
    """A new filter for the lines of `sources`: (filter, growable, how it was sized). Fixed at
    `capacity` when given (growable from there with `expansion`); else growable (when this build
    can), its initial capacity the estimate of the distinct lines x 1.2, or GROWABLE_START for
    input of unknown size, its stages growing by `expansion` (default 2). `seed` None: a secret
    random seed. `bucket_size`: slots a bucket (vector_bucket_size for dedup)."""
    b = bucket_size
    if capacity is not None:
        if expansion is not None:
            return (Filter(capacity, fpr, seed=seed, growable=True, expansion=expansion, bucket_size=b), True,
                    f"initial capacity {capacity:,}, growable (expansion {expansion})")
        return Filter(capacity, fpr, seed=seed, bucket_size=b), False, f"capacity {capacity:,} (fixed)"
    estimate, known = estimate_keys(sources, block, record_end)
    capacity = max(int(estimate * 1.2) + 16, MIN_CAPACITY) if known else GROWABLE_START
    f, growable = new_filter(capacity, fpr, growable=True, seed=seed, expansion=expansion, bucket_size=b)
    if growable:
        how = "estimated distinct lines" if known else "input of unknown size"
        return f, True, f"growable, initial capacity {capacity:,} ({how})"
    if not known:
        capacity = STDIN_CAPACITY
        f = Filter(capacity, fpr, seed=seed, bucket_size=b)
    how = "estimated from the input" if known else "default for input of unknown size"
    return f, False, f"capacity {capacity:,} ({how})"
