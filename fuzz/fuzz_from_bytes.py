"""Coverage-guided fuzzing of Filter.from_bytes (atheris).

    python fuzz/fuzz_from_bytes.py fuzz/corpus/from_bytes -max_total_time=60

Whatever the bytes, from_bytes either raises cuckoo.FormatError (a ValueError) or returns a filter
that works: it answers lookups, serializes back to bytes that read back as an equal filter, and
its copy can take inserts. Anything else (another exception, a crash, a sanitizer report) is a
finding.

Almost every mutation breaks a checksum, and the checks behind the checksums would then never
run; so the first byte of an input is a mode: odd, the rest has its checksums recomputed (tolerantly, for whatever
fields it holds) before it is read; even, the rest is read as it is. The parameter, layout and padding checks get fuzzed too.
fuzz/corpus/from_bytes holds valid filters of several shapes as seeds
(fuzz/make_corpus.py writes them).
"""

from __future__ import annotations

import os
import struct
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from _format_ref import xxh64  # noqa: E402  (the test suite's independent XXH64)

with atheris.instrument_imports(include=["cuckoo"]):
    import cuckoo
    import cuckoo._persist  # noqa: F401  (the pickle/load path shares the reader)

PROBES = [0, 1, -1, 2**63, b"", b"x", "key"]


@atheris.instrument_func
def fix_checksums(data: bytes) -> bytes:
    """data with the table and header checksums its fields point at recomputed."""
    buf = bytearray(data)
    if len(buf) < 64:
        return bytes(buf)
    (stages,) = struct.unpack_from("<I", buf, 52)
    stages = min(stages, 64, (len(buf) - 72) // 64) if len(buf) >= 72 else 0
    for i in range(stages):
        rec = 64 + 64 * i
        offset, length = struct.unpack_from("<QQ", buf, rec + 32)
        if offset + length <= len(buf) and length <= 1 << 16:
            struct.pack_into("<Q", buf, rec + 48, xxh64(bytes(buf[offset : offset + length])))
    end = 64 + 64 * stages
    if end + 8 <= len(buf):
        struct.pack_into("<Q", buf, end, xxh64(bytes(buf[:end])))
    return bytes(buf)


@atheris.instrument_func
def test_one_input(data: bytes) -> None:
    if not data:
        return
    data = fix_checksums(data[1:]) if data[0] & 1 else data[1:]
    try:
        f = cuckoo.Filter.from_bytes(data)
    except cuckoo.FormatError:
        return
    # Accepted: it must behave like a filter.
    n = len(f)
    assert 0 <= n <= f.slot_count
    assert 0.0 <= f.load_factor <= 1.0
    answers = f.contains_many(PROBES)
    assert list(answers) == [k in f for k in PROBES]
    again = cuckoo.Filter.from_bytes(f.to_bytes())
    assert again == f and len(again) == n
    g = f.copy()
    try:
        inserted = g.add_many(PROBES)
    except cuckoo.FilterFullError as e:
        inserted = e.inserted
    assert 0 <= inserted <= len(PROBES)
    assert g.contains_many(PROBES[:inserted]).all()  # no false negative after inserts
    assert len(f) == n  # the copy is independent


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
