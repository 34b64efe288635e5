"""Writes tests/data/golden_store_v1.ckv (+ .idx): a small store in format version 1, made
deterministically (fixed seed and log id), that every later release and every platform must read
the same way (tests/test_store.py and the C++ test test_store read it).

    python tests/data/make_golden_store.py

Contents: keys b"k0".."k99" with values b"value-<i>" * (i % 4); then k0..k9 overwritten with
b"new-<i>"; k90..k99 deleted; the int keys 0..9 with b"int-<i>"; the str key "é" with "ü".
"""

from __future__ import annotations

import os

from cuckoo import _core

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "golden_store_v1.ckv")


def expected() -> dict:
    d = {b"k%d" % i: b"value-%d" % i * (i % 4) for i in range(100)}
    for i in range(10):
        d[b"k%d" % i] = b"new-%d" % i
    for i in range(90, 100):
        del d[b"k%d" % i]
    for i in range(10):
        d[i.to_bytes(8, "little")] = b"int-%d" % i
    d["é".encode()] = "ü".encode()
    return d


def write(path: str = PATH) -> None:
    for ext in ("", ".idx", ".lock"):
        if os.path.exists(path + ext):
            os.unlink(path + ext)
    s = _core._Store.open(path, False, 0x5EED, 16, 0x601DE4)
    s.put_many([b"k%d" % i for i in range(100)], [b"value-%d" % i * (i % 4) for i in range(100)])
    for i in range(10):
        s.put(b"k%d" % i, b"new-%d" % i)
    s.discard_many([b"k%d" % i for i in range(90, 100)])
    s.put_many(list(range(10)), [b"int-%d" % i for i in range(10)])
    s.put("é", "ü")
    s.close()


def main() -> None:
    write()
    print(f"wrote {PATH} ({os.path.getsize(PATH)} bytes) and its .idx")


if __name__ == "__main__":
    main()
