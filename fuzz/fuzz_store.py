"""Coverage-guided fuzzing of opening a cuckoo.Store (atheris): its log and its index snapshot.

    python fuzz/fuzz_store.py /tmp/new fuzz/corpus/store -max_total_time=60

An input is a mode byte, a 2-byte little-endian length L, then L bytes of log and the rest as the
snapshot (PATH.idx). Whatever the bytes, opening either raises cuckoo.FormatError or gives a store
that works: every read answers or raises FormatError naming a corrupt offset, and a writer takes a
new record that is found after closing and reopening. A writer that met damage (at open or on a
read) then opens it with repair=True, which must give a store that reads, writes, and reopens
cleanly without repair. Anything else (another exception, a crash,
a sanitizer report) is a finding.

Almost every mutation breaks a checksum; mode bit 0 recomputes every checksum the bytes hold (the
log header's, each record's that fits, the snapshot's header, body and log-tail hash), so that
the checks behind them (lengths, offsets, counts, recovery) are fuzzed too. Mode bit 1 opens the
store read-only. fuzz/make_corpus.py writes the seed corpus (small valid stores).
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
import warnings

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from _format_ref import xxh3_64  # noqa: E402  (the test suite's independent XXH3-64)

with atheris.instrument_imports(include=["cuckoo"]):
    import cuckoo

PROBES = [b"k1", b"k2", "key", 0, 7, b""]
# libFuzzer ends the process with exit(): give it a folder that the caller removes (CI sets
# CUCKOO_FUZZ_TMP to its scratch folder), else one under the system temp.
WORK = tempfile.mkdtemp(prefix="cuckoo-fuzz-store-", dir=os.environ.get("CUCKOO_FUZZ_TMP"))
PATH = os.path.join(WORK, "s.ckv")


def low32(data: bytes, seed: int) -> int:
    return xxh3_64(data, seed) & 0xFFFFFFFF


@atheris.instrument_func
def fix_log(log: bytearray) -> None:
    if len(log) >= 48:
        struct.pack_into("<I", log, 44, low32(bytes(log[:44]), 0))
    if len(log) >= 60:
        struct.pack_into("<I", log, 56, low32(bytes(log[48:56]), 0))
    at = 64
    while at + 12 <= len(log):
        klen, vfield = struct.unpack_from("<II", log, at + 4)
        vlen = 0 if vfield == 0xFFFFFFFF else vfield
        if 12 + klen + vlen > len(log) - at:
            break
        struct.pack_into("<I", log, at, low32(bytes(log[at + 4 : at + 12 + klen + vlen]), at))
        at += (12 + klen + vlen + 7) & ~7


@atheris.instrument_func
def fix_index(idx: bytearray, log: bytes) -> None:
    if len(idx) < 96:
        return
    (end,) = struct.unpack_from("<Q", idx, 24)
    if 64 <= end <= len(log):
        struct.pack_into("<Q", idx, 64, xxh3_64(log[max(64, end - 64) : end], 0))
    struct.pack_into("<Q", idx, 72, xxh3_64(bytes(idx[96:]), 0))
    struct.pack_into("<I", idx, 80, low32(bytes(idx[:80]), 0))


@atheris.instrument_func
def repair_and_check() -> None:
    """A damaged store opened with repair=True: opens (unless its header is damaged), every read
    answers, a write is taken, and it then reopens without repair and without a warning, with
    the same contents."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cuckoo.RecoveryWarning)
        try:
            r = cuckoo.Store(PATH, repair=True)
        except cuckoo.FormatError as exc:
            assert "header" in str(exc) or "not a cuckoo store" in str(exc) or "version" in str(exc), exc
            return
    try:
        items = dict(r.items())
        r["fuzz-new-key"] = b"fuzz-value"
        items[b"fuzz-new-key"] = b"fuzz-value"
    finally:
        r.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cuckoo.RecoveryWarning)
        again = cuckoo.Store(PATH)
    try:
        assert dict(again.items()) == items
    finally:
        again.close()


@atheris.instrument_func
def exercise(readonly: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cuckoo.RecoveryWarning)
        try:
            s = cuckoo.Store(PATH, readonly=readonly)
        except cuckoo.FormatError:
            if not readonly:
                repair_and_check()
            return
    try:
        n = len(s)
        assert n >= 0 and s.stats()["live_keys"] == n
        try:
            seen = 0
            for k, v in s.items():
                assert isinstance(k, bytes) and isinstance(v, bytes)
                seen += 1
            assert seen == n
            got = s.get_many(PROBES)
            assert [g is not None for g in got] == list(s.contains_many(PROBES))
            assert [p in s for p in PROBES] == list(s.contains_many(PROBES))
        except cuckoo.FormatError as exc:
            assert "corrupt at offset" in str(exc)
            if not readonly:
                s.close()  # (no snapshot written over the damage)
                repair_and_check()
            return
        if not readonly:
            s["fuzz-new-key"] = b"fuzz-value"
            s.close()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cuckoo.RecoveryWarning)
                again = cuckoo.Store(PATH, readonly=True)
            assert again["fuzz-new-key"] == b"fuzz-value"
            again.close()
    finally:
        s.close()


@atheris.instrument_func
def test_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    mode = data[0]
    (split,) = struct.unpack_from("<H", data, 1)
    log, idx = bytearray(data[3 : 3 + split]), bytearray(data[3 + split :])
    if mode & 1:
        fix_log(log)
        fix_index(idx, bytes(log))
    for name in os.listdir(WORK):
        os.unlink(os.path.join(WORK, name))
    with open(PATH, "wb") as fh:
        fh.write(log)
    if idx:
        with open(PATH + ".idx", "wb") as fh:
            fh.write(idx)
    exercise(readonly=bool(mode & 2))


def main() -> None:
    try:
        atheris.Setup(sys.argv, test_one_input)
        atheris.Fuzz()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
