"""cuckoo.Store and its paths (NUL bytes, FIFOs, an oversized snapshot, symlinks and hard links,
leftover files) and fork(): a writer through any name is refused, a snapshot is only a cache,
and a forked child cannot write through its parent's store."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import _format_ref as ref
import pytest

import cuckoo
from cuckoo import _core

pytestmark = pytest.mark.skipif(os.name != "posix", reason="cuckoo.Store needs POSIX files")


def make_store(path, n=100):
    with cuckoo.Store(path) as s:
        s.put_many([b"k%d" % i for i in range(n)], [b"v%d" % i for i in range(n)])


def intact(s, n=100):
    return len(s) == n and all(s[b"k%d" % i] == b"v%d" % i for i in range(0, n, 7)) and b"absent" not in s


# ---- names ----

def test_nul_byte_in_the_path_is_refused(tmp_path):
    # f0df2c2: "a\0b" opened "a" as log, lock and snapshot at once.
    before = set(os.listdir(tmp_path))
    for readonly in (False, True):
        with pytest.raises(ValueError, match="null byte"):
            cuckoo.Store(str(tmp_path / "a\0b"), readonly=readonly)
        with pytest.raises(ValueError, match="null byte"):
            _core._Store.open(str(tmp_path / "a\0b"), readonly, 0, 16, 0)
    assert set(os.listdir(tmp_path)) == before


def test_empty_path_is_refused_and_creates_nothing(tmp_path, monkeypatch):
    # f0df2c2: Store("") created ./.lock.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="empty"):
        cuckoo.Store("")
    with pytest.raises(ValueError, match="empty"):
        _core._Store.open("", False, 0, 16, 0)
    assert os.listdir(tmp_path) == []


def test_failed_open_leaves_no_lock_file(tmp_path):
    # f0df2c2: every open, failed or not, left PATH.lock behind.
    path = str(tmp_path / "s.ckv")
    with open(path, "wb") as fh:
        fh.write(b"not a store at all, longer than a header" * 4)
    with pytest.raises(cuckoo.FormatError):
        cuckoo.Store(path)
    make_store(str(tmp_path / "t.ckv"))
    assert sorted(os.listdir(tmp_path)) == ["s.ckv", "t.ckv", "t.ckv.idx"]


FIFO_SCRIPT = textwrap.dedent("""
    import os, sys, warnings
    import cuckoo
    from cuckoo import _core
    path = sys.argv[1]
    for readonly in (True, False):
        s = cuckoo.Store(path, readonly=readonly)
        assert len(s) == 100 and s[b"k99"] == b"v99", len(s)
        assert not s.stats()["snapshot_used"], s.stats()
        s.close()
    fifo = path + ".fifo"
    os.mkfifo(fifo)
    for readonly in (True, False):
        try:
            _core._Store.open(fifo, readonly, 0, 16, 0)
        except ValueError as exc:
            assert "regular file" in str(exc), exc
        else:
            raise AssertionError("a FIFO opened as a store")
    print("ok")
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_as_snapshot_or_log_never_hangs(tmp_path):
    # f0df2c2: open() of a FIFO at PATH.idx waited forever (a reader and a writer alike).
    path = str(tmp_path / "s.ckv")
    make_store(path)
    os.unlink(path + ".idx")
    os.mkfifo(path + ".idx")
    proc = subprocess.run([sys.executable, "-W", "error", "-c", FIFO_SCRIPT, path],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_sparse_terabyte_snapshot_is_ignored(tmp_path):
    # f0df2c2: a sparse 1 TiB PATH.idx made the store unopenable (MemoryError from bad_alloc).
    path = str(tmp_path / "s.ckv")
    make_store(path)
    os.truncate(path + ".idx", 1 << 40)
    for readonly in (True, False):
        with cuckoo.Store(path, readonly=readonly) as s:
            assert intact(s)
            assert not s.stats()["snapshot_used"]
    with cuckoo.Store(path, readonly=True) as s:  # the writer's close wrote a good snapshot again
        assert s.stats()["snapshot_used"] and intact(s)


def _checksum32(data):
    return ref.xxh3_64(data, 0) & 0xFFFFFFFF


def test_snapshot_claiming_a_huge_table_is_ignored(tmp_path):
    """A well-formed header whose table (2^32 buckets, 96 GiB) matches its sparse file's size:
    refused for memory before anything is allocated or read."""
    path = str(tmp_path / "s.ckv")
    make_store(path)
    with open(path + ".idx", "rb") as fh:
        header = bytearray(fh.read(96))
    buckets = 1 << 32
    struct.pack_into("<Q", header, 32, buckets)
    struct.pack_into("<Q", header, 48, 0)  # no stash
    struct.pack_into("<I", header, 80, _checksum32(bytes(header[:80])))
    with open(path + ".idx", "r+b") as fh:
        fh.write(header)
    os.truncate(path + ".idx", 96 + 24 * buckets)
    with cuckoo.Store(path, readonly=True) as s:
        assert intact(s) and not s.stats()["snapshot_used"]
        assert "snapshot" in s.stats()["snapshot_note"]


# ---- links ----

@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_second_writer_through_a_link_is_refused(tmp_path, link):
    # f0df2c2: the lock was by name, so a writer through a link was a second writer.
    path = str(tmp_path / "s.ckv")
    other = str(tmp_path / "other.ckv")
    make_store(path)
    (os.symlink if link == "symlink" else os.link)(path, other)
    with cuckoo.Store(path) as s:
        with pytest.raises(cuckoo.StoreLockedError):
            cuckoo.Store(other)
        s[b"more"] = b"x"
    with cuckoo.Store(other) as s:  # and the other way round
        with pytest.raises(cuckoo.StoreLockedError):
            cuckoo.Store(path)
        assert s[b"more"] == b"x" and len(s) == 101 and s[b"k99"] == b"v99"


def test_compact_through_a_symlink_replaces_the_target(tmp_path):
    # f0df2c2: compact() renamed the new log over the link, leaving the target stale.
    target = str(tmp_path / "real.ckv")
    link = str(tmp_path / "link.ckv")
    make_store(target)
    os.symlink(target, link)
    with cuckoo.Store(link) as s:
        for i in range(50):
            del s[b"k%d" % i]
        s.compact()
        s[b"after"] = b"compaction"
    assert os.path.islink(link) and os.readlink(link) == target
    assert not os.path.exists(link + ".idx")  # the snapshot sits beside the file itself
    with cuckoo.Store(target, readonly=True) as s:
        assert len(s) == 51 and s[b"after"] == b"compaction" and s[b"k99"] == b"v99"
        assert s.stats()["snapshot_used"]


def test_writer_after_compaction_is_still_refused(tmp_path):
    """Compaction replaces the log's inode: the lock moves with it, at every moment."""
    path = str(tmp_path / "s.ckv")
    make_store(path)
    with cuckoo.Store(path) as s:
        s.compact()
        with pytest.raises(cuckoo.StoreLockedError):
            cuckoo.Store(path)
        s[b"x"] = b"y"
    with cuckoo.Store(path) as s:
        assert len(s) == 101


# ---- fork() ----

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_cannot_write_through_the_parents_store(tmp_path):
    # f0df2c2: parent and child both appended at the same offsets and overwrote each other.
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    s.put_many([b"k%d" % i for i in range(100)], [b"v%d" % i for i in range(100)])
    s.sync()
    s[b"buffered"] = b"parent"  # in the parent's buffer at the fork: the child must not write it
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report every check, never return into pytest
        code = 1
        try:
            os.close(r)
            results = []
            for name, call in [
                ("put", lambda: s.__setitem__(b"child", b"c")),
                ("put_many", lambda: s.put_many([b"c1", b"c2"], [b"1", b"2"])),
                ("add_unique_many", lambda: s.add_unique_many([b"c3"])),
                ("discard", lambda: s.discard(b"k1")),
                ("reserve", lambda: s.reserve(10**5)),
                ("sync", s.sync),
                ("snapshot", s.snapshot),
                ("compact", s.compact),
            ]:
                try:
                    call()
                    results.append(f"{name}:wrote")
                except cuckoo.StoreForkedError as exc:
                    ok = isinstance(exc, cuckoo.CuckooError) and "child" in str(exc)
                    results.append(f"{name}:{'refused' if ok else 'badmessage'}")
            results.append(f"read:{s[b'k5'] == b'v5' and s[b'buffered'] == b'parent'}")
            s.close()  # writes nothing
            results.append(f"closed:{s.closed}")
            os.write(w, " ".join(results).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as fh:
        report = fh.read().split()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert report == ["put:refused", "put_many:refused", "add_unique_many:refused", "discard:refused",
                      "reserve:refused", "sync:refused", "snapshot:refused", "compact:refused",
                      "read:True", "closed:True"], report
    # The parent goes on as if nothing happened, and its lock held throughout.
    with pytest.raises(cuckoo.StoreLockedError):
        cuckoo.Store(path)
    s[b"after"] = b"fork"
    s.close()
    with cuckoo.Store(path, readonly=True) as t:
        assert len(t) == 102 and t[b"buffered"] == b"parent" and t[b"after"] == b"fork"
        assert b"child" not in t and b"c1" not in t and t[b"k1"] == b"v1"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_child_can_open_the_store_itself_after_the_parent_closed_it(tmp_path):
    path = str(tmp_path / "s.ckv")
    s = cuckoo.Store(path)
    s[b"a"] = b"1"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            del s  # dropping the inherited copy writes nothing either
            import time
            for _ in range(500):
                try:
                    with cuckoo.Store(path) as mine:
                        mine[b"child"] = b"2"
                    code = 0
                    break
                except cuckoo.StoreLockedError:
                    time.sleep(0.01)
        finally:
            os._exit(code)
    s.close()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    with cuckoo.Store(path, readonly=True) as t:
        assert dict(t.items()) == {b"a": b"1", b"child": b"2"}
