"""Exactly-once reruns of ``cuckoo dedup --store STORE -o FILE`` (issue 47, cuckoo._dedup.resume).

A run stopped anywhere, then run again as the same command, leaves its output and dropped files
byte for byte those of one run that was never stopped, and the store with the same keys.

* Deterministic: a write of the store's files fails at every position in turn (the store's I/O
  fault hook: the run journal's points, the blocks' batches, the close), for lines, CSV with a
  header, JSON Lines, two inputs, 1 and 2 threads, over a store that already holds keys.
* Trials (the must-show of issue 47): the command line stopped at a random moment by SIGKILL,
  SIGINT, a file size limit (RLIMIT_FSIZE: EFBIG, as a full disk) or its stderr pipe closed
  (with --progress), then rerun until it succeeds. A few by default, 100 with ``-m slow``.
* The journal's rules: a finished run is not redone, a changed input or another output starts a
  new run, an output cut shorter or a store synced by another run since is refused on one line.
"""

from __future__ import annotations

import errno
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import cuckoo
from cuckoo import _core
from cuckoo._dedup.resume import ResumeError, read_points

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the store needs POSIX files")


# ---- inputs ---------------------------------------------------------------------------------


def lines_input(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(b"%x\n" % rng.getrandbits(12) for _ in range(n))


def csv_input(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    rows = [b"id,name,note\n"]
    for i in range(n):
        k = rng.getrandbits(11)
        note = b'"a, ""quoted""\nnote"' if i % 7 == 0 else b"plain"  # (a record over two lines)
        rows.append(b"%d,n%d,%s\n" % (k, i, note))
    return b"".join(rows)


def jsonl_input(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(json.dumps({"user": {"id": rng.getrandbits(11)}, "i": i}).encode() + b"\n" for i in range(n))


FRAMINGS = {
    "lines": (lines_input, {}, []),
    "csv": (csv_input, {"csv": True, "key": "id"}, ["--csv", "-k", "id"]),
    "jsonl": (jsonl_input, {"jsonl": True, "key": "user.id"}, ["--jsonl", "-k", "user.id"]),
}


def read_output(path: Path) -> bytes:
    """A file's bytes, decompressed (every member) for .gz, .xz and .bz2."""
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(path.suffix)
    if opener is None:
        return path.read_bytes()
    with opener(path, "rb") as fh:
        return fh.read()


class Job:
    """One dedup job: its inputs, store, output and dropped files under `root`, and the store's
    keys of "yesterday" (another file's) before the job."""

    def __init__(self, root: Path, framing: str, inputs: int = 1, n: int = 6000, seed: int = 1,
                 suffix: str = "") -> None:
        self.root = root
        make, self.api_kw, self.cli_args = FRAMINGS[framing]
        root.mkdir(parents=True, exist_ok=True)
        self.inputs = []
        for k in range(inputs):
            p = root / f"in{k}.txt"
            p.write_bytes(make(n, seed + k))
            self.inputs.append(p)
        self.yesterday = root / "yesterday.txt"
        self.yesterday.write_bytes(make(n // 4, seed + 100))
        # (suffix ".gz", ".xz", ...: compressed outputs, cut where a member ended; their
        # decompressed bytes are compared)
        self.store, self.out, self.dropped = root / "seen.ckv", root / f"out.txt{suffix}", root / f"dropped.txt{suffix}"

    def fresh(self) -> None:
        """The store of yesterday's keys, and no output yet."""
        for p in self.root.iterdir():
            if p.name.startswith(("seen.ckv", "out", "dropped", "y.out")):
                p.unlink()
        cuckoo.dedup(str(self.yesterday), str(self.root / "y.out"), store=str(self.store), **self.api_kw)
        (self.root / "y.out").unlink()

    def api(self, **kw) -> cuckoo.DedupResult:
        src = [str(p) for p in self.inputs] if len(self.inputs) > 1 else str(self.inputs[0])
        return cuckoo.dedup(src, str(self.out), store=str(self.store), dropped=str(self.dropped), **self.api_kw, **kw)

    def cli(self, *extra: str) -> List[str]:
        return [sys.executable, "-m", "cuckoo", "dedup", "--store", str(self.store), *self.cli_args,
                *[str(p) for p in self.inputs], "-o", str(self.out), "--dropped", str(self.dropped), *extra]

    def files(self) -> Tuple[bytes, bytes, bytes, bytes, int]:
        """The output and dropped files' bytes (a compressed file's too: its members end where
        blocks ended, and blocks end where they would have without the stop), what they
        decompress to, and the store's keys."""
        with cuckoo.Store(str(self.store), readonly=True) as s:
            keys = len(s)
        return (self.out.read_bytes(), self.dropped.read_bytes(), read_output(self.out), read_output(self.dropped),
                keys)

    def reference(self, **kw) -> Tuple[bytes, bytes, int]:
        self.fresh()
        r = self.api(**kw)
        assert r.store_stats["run_journal"]["mode"] == "new"
        return self.files()


# ---- deterministic: a failed write at every position ------------------------------------------


@pytest.mark.parametrize("framing,inputs,threads,suffix", [
    ("lines", 1, 1, ""), ("lines", 2, 2, ""), ("csv", 1, 2, ""), ("csv", 2, 1, ""), ("jsonl", 1, 1, ""),
    ("lines", 1, 2, ".gz"), ("csv", 2, 1, ".gz"), ("jsonl", 1, 1, ".xz"), ("lines", 2, 1, ".bz2")])
def test_a_failed_store_write_anywhere_then_a_rerun_gives_the_uninterrupted_files(tmp_path, framing, inputs, threads,
                                                                                   suffix):
    job = Job(tmp_path, framing, inputs, suffix=suffix)
    kw = dict(block_size=4096, threads=threads)
    ref = job.reference(**kw)
    assert ref[2] and ref[3]  # (both files have records)
    n, failed, modes = 1, 0, []
    while True:
        job.fresh()
        _core._testing_io_fault(n, errno.ENOSPC, False)  # the nth write of the store's files fails
        try:
            job.api(**kw)
            stopped = False
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            stopped = True
        finally:
            _core._testing_io_fault(0, 0, False)
        if not stopped:
            break  # past the run's last write
        failed += 1
        r = job.api(**kw)
        modes.append(r.store_stats["run_journal"]["mode"])  # (new: the run's first point was not written)
        assert job.files() == ref, f"the rerun after write {n} failed differs"
        n += 1 if n < 12 else 5
    assert failed >= 6  # (the run has that many writes: points, batches, the close)
    assert modes[0] == "new" and modes.count("resume") >= 4, modes


def test_the_rerun_says_where_it_resumed_and_finishes_once(tmp_path):
    job = Job(tmp_path, "lines", n=20000)
    ref = job.reference(block_size=4096)
    job.fresh()
    _core._testing_io_fault(9, errno.EFBIG, False)
    try:
        with pytest.raises(OSError):
            job.api(block_size=4096)
    finally:
        _core._testing_io_fault(0, 0, False)
    partial = job.out.read_bytes()
    assert 0 < len(partial) < len(ref[0])
    r = job.api(block_size=4096)
    run = r.store_stats["run_journal"]
    assert run["mode"] == "resume" and 0 < run["records_before"] < 20000
    assert r.lines_read == 20000 - run["records_before"]  # (the rerun reads only what is left)
    assert job.files() == ref
    again = job.api(block_size=4096)
    assert again.store_stats["run_journal"]["mode"] == "done" and again.lines_read == 0
    assert job.files() == ref


# ---- the journal's rules ------------------------------------------------------------------------


def interrupted(job: Job, at: int = 9) -> None:
    job.fresh()
    _core._testing_io_fault(at, errno.ENOSPC, False)
    try:
        with pytest.raises(OSError):
            job.api(block_size=4096)
    finally:
        _core._testing_io_fault(0, 0, False)


def test_a_finished_run_is_not_redone_on_the_command_line(tmp_path):
    job = Job(tmp_path, "csv")
    job.fresh()
    first = subprocess.run(job.cli(), capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr
    files = job.files()
    again = subprocess.run(job.cli(), capture_output=True, timeout=120)
    assert again.returncode == 0
    assert b"this run already finished" in again.stderr and b"nothing to do" in again.stderr
    assert job.files() == files


def test_a_finished_run_whose_output_changed_is_refused(tmp_path):
    job = Job(tmp_path, "lines", suffix=".gz")
    job.reference(block_size=4096)
    with open(job.out, "ab") as fh:  # (an empty gzip member more: the same records, another file)
        fh.write(__import__("gzip").compress(b""))
    before = job.out.read_bytes()
    with pytest.raises(ResumeError, match="finished before, and .* changed since"):
        job.api(block_size=4096)
    assert job.out.read_bytes() == before


def test_every_rerun_of_a_compressed_output_leaves_a_finished_run(tmp_path):
    """Stopped at each write in turn (the last ones: a resumed run that has no record left to
    write), the rerun's compressed file ends with no empty member: its size is the journal's, so
    the rerun after it finds the run finished and changes nothing."""
    job = Job(tmp_path, "lines", suffix=".gz")
    ref = job.reference(block_size=4096)
    resumed = 0
    for n in range(1, 400):
        job.fresh()
        _core._testing_io_fault(n, errno.ENOSPC, False)
        try:
            job.api(block_size=4096)
            break  # past the run's last write
        except OSError:
            pass
        finally:
            _core._testing_io_fault(0, 0, False)
        r = job.api(block_size=4096)
        resumed += r.store_stats["run_journal"]["mode"] == "resume"
        assert job.files() == ref, n
        size = job.out.stat().st_size
        again = job.api(block_size=4096)
        assert again.store_stats["run_journal"]["mode"] == "done", n
        assert job.out.stat().st_size == size
    assert resumed >= 4


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
def test_a_compressed_output_with_no_record_is_a_valid_file_and_a_finished_run(tmp_path, suffix):
    """Every key seen before: the output gets no record. Its one empty member is written at the
    run's last point, so the file is valid, its size is the journal's, and a rerun does nothing
    (the slow trials found a 25-byte file against a point of 0 bytes: the rerun refused)."""
    job = Job(tmp_path, "lines", suffix=suffix)
    job.fresh()
    cuckoo.dedup(str(job.inputs[0]), str(tmp_path / "first.txt"), store=str(job.store))  # every key seen
    r = job.api(block_size=4096)
    assert r.lines_kept == 0
    assert read_output(job.out) == b"" and job.out.stat().st_size > 0
    assert read_points(str(job.store) + ".run")[0]["out_bytes"] == job.out.stat().st_size
    assert job.api(block_size=4096).store_stats["run_journal"]["mode"] == "done"


def test_a_changed_input_starts_a_new_run(tmp_path):
    job = Job(tmp_path, "lines")
    interrupted(job)
    with open(job.inputs[0], "ab") as fh:
        fh.write(b"brand-new-line\n")
    r = job.api(block_size=4096)
    # A new run: the output is rewritten with the records the store does not hold (the
    # interrupted run's committed keys are held: as without a journal).
    assert r.store_stats["run_journal"]["mode"] == "new"
    assert job.out.read_bytes().endswith(b"brand-new-line\n")


def test_another_output_starts_a_new_run_and_a_removed_output_starts_over(tmp_path):
    job = Job(tmp_path, "lines")
    ref = job.reference(block_size=4096)
    interrupted(job)
    job.out.unlink()
    r = job.api(block_size=4096)
    assert r.store_stats["run_journal"]["mode"] == "new"
    interrupted(job)
    other = tmp_path / "other.txt"
    r = cuckoo.dedup(str(job.inputs[0]), str(other), store=str(job.store), dropped=str(job.dropped), block_size=4096)
    assert r.store_stats["run_journal"]["mode"] == "new"
    assert len(other.read_bytes()) < len(ref[2])  # (what the interrupted run committed is seen)


def test_an_output_cut_shorter_is_refused_on_one_line(tmp_path):
    job = Job(tmp_path, "lines")
    interrupted(job)
    recorded = min(p["out_bytes"] for p in read_points(str(job.store) + ".run"))
    assert recorded > 0
    with open(job.out, "r+b") as fh:  # shorter than any point the journal holds
        fh.truncate(recorded - 1)
    store_before = job.store.read_bytes()
    with pytest.raises(ResumeError, match=r"cannot resume the interrupted run: .* fewer than .*; remove"):
        job.api(block_size=4096)
    assert job.store.read_bytes() == store_before  # (nothing cut, nothing written)
    proc = subprocess.run(job.cli("--block-size", "4096"), capture_output=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count(b"\n") == 1 and b"cannot resume" in proc.stderr


def test_a_store_written_and_synced_by_another_run_since_is_refused(tmp_path):
    job = Job(tmp_path, "lines")
    # Stopped between a point and its commit: the log holds a block past the older point...
    interrupted(job, at=10)
    points = read_points(str(job.store) + ".run")
    assert points and not points[0]["done"]
    # ... then another program adds a key and closes the store (syncing it past the point).
    with cuckoo.Store(str(job.store)) as s:
        s.add(b"someone else's key")
    with pytest.raises(ResumeError, match="written and synced by another run since"):
        job.api(block_size=4096)
    with cuckoo.Store(str(job.store), readonly=True) as s:
        assert b"someone else's key" in s


def test_a_compressed_output_is_whole_members_at_every_point(tmp_path):
    """A compressed output ends a member at each commit: cut at any point the journal recorded,
    the file is a complete gzip file; a finished run's file is one gzip reader reads whole."""
    import zlib

    job = Job(tmp_path, "csv", suffix=".gz")
    ref = job.reference(block_size=4096)
    sizes = []
    for at in (5, 9, 14):
        interrupted(job, at)
        point = read_points(str(job.store) + ".run")[0]
        sizes.append(point["out_bytes"])
        data = job.out.read_bytes()[:point["out_bytes"]]
        plain, pos = b"", 0
        while pos < len(data):  # member by member: each one ends
            d = zlib.decompressobj(31)
            plain += d.decompress(data[pos:])
            assert d.eof, f"the point at {pos} of {len(data)} cuts a member"
            pos = len(data) - len(d.unused_data)
        assert ref[2].startswith(plain) and plain.startswith(b"id,name,note\n")
    assert len(set(sizes)) == 3
    job.api(block_size=4096)
    assert job.files() == ref


def test_a_torn_newer_point_falls_back_to_the_older_one(tmp_path):
    job = Job(tmp_path, "jsonl")
    ref = job.reference(block_size=4096)
    interrupted(job, at=11)
    points = read_points(str(job.store) + ".run")
    assert len(points) == 2
    slot = points[0]["sequence"] % 2
    with open(str(job.store) + ".run", "r+b") as fh:  # the newer slot's checksum no longer matches
        fh.seek(slot * 128 + 60)
        fh.write(b"\xff")
    assert read_points(str(job.store) + ".run")[0]["sequence"] == points[1]["sequence"]
    job.api(block_size=4096)
    assert job.files() == ref


def test_outputs_that_cannot_be_cut_back_keep_no_journal(tmp_path):
    """A stream as the output, a stream or compressed file as the input: at least once, no
    journal written."""
    import gzip

    job = Job(tmp_path, "lines")
    job.fresh()
    journal = str(job.store) + ".run"
    before = read_points(journal)  # (yesterday's run: its own points)
    gz = tmp_path / "in.txt.gz"
    gz.write_bytes(gzip.compress(job.inputs[0].read_bytes()))
    cuckoo.dedup(str(gz), str(job.out), store=str(job.store))
    with open(job.inputs[0], "rb") as fh:
        cuckoo.dedup(fh, str(job.out), store=str(job.store))
    cuckoo.dedup(str(job.inputs[0]), io.BytesIO(), store=str(job.store))
    assert read_points(journal) == before


# ---- trials: the command line stopped at a random moment ---------------------------------------


def stop_at_random(job: Job, how: str, rng: random.Random, span: float, extra: List[str]) -> int:
    """Runs the command line and stops it `how`, at a random moment within about `span` seconds;
    its exit status."""
    cmd = job.cli(*extra)
    if how == "fsize":
        limit = rng.randint(1 << 10, 1 << 21)

        def limited() -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return subprocess.run(cmd, capture_output=True, timeout=120, preexec_fn=limited).returncode
    if how == "pipe":
        p = subprocess.Popen(cmd + ["--progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0, span))
        p.stderr.close()  # the next progress line meets a closed pipe
        return p.wait(timeout=120)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0, span))
    p.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
    return p.wait(timeout=120)


def one_trial(tmp_path: Path, how: str, seed: int, suffix: str) -> None:
    rng = random.Random(seed)
    framing = ("lines", "csv", "jsonl")[seed % 3]
    job = Job(tmp_path / f"t{seed}", framing, inputs=1 + seed % 2, n=60000, seed=seed, suffix=suffix)
    extra = ["--block-size", str(rng.choice([8192, 65536])), "--threads", str(1 + seed % 2)]
    job.fresh()
    start = time.perf_counter()
    ok = subprocess.run(job.cli(*extra), capture_output=True, timeout=120)
    span = time.perf_counter() - start
    assert ok.returncode == 0, ok.stderr
    ref = job.files()
    job.fresh()
    stops = []
    for _ in range(4):  # stopped up to 4 times, then run to the end
        stops.append(stop_at_random(job, how, rng, span, extra))
    final = subprocess.run(job.cli(*extra), capture_output=True, timeout=120)
    assert final.returncode == 0, final.stderr
    assert job.files() == ref, f"trial {how} seed {seed} ({framing}{suffix}, {extra}, exits {stops}) differs"


HOWS = ["kill", "int", "fsize", "pipe"]


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize("how", HOWS)
def test_stopped_at_a_random_moment_then_rerun(tmp_path, how, suffix):
    one_trial(tmp_path, how, seed=HOWS.index(how) + (3 if suffix else 0), suffix=suffix)


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(100))
def test_stopped_at_a_random_moment_then_rerun_100(tmp_path, trial):
    one_trial(tmp_path, HOWS[trial % 4], seed=1000 + trial, suffix=("", ".gz")[(trial // 4) % 2])
