"""`cuckoo dedup --store` under faults, and the CLI's refusals and exit codes around stores.

The promise (docs/store.md, "dedup --store: at least once"): a line is recorded in the store only
once its output has been handed to the OS, so after any interruption (SIGKILL, SIGINT, a reader
that closes the pipe, a full output, a store that cannot be written) a rerun with the same store
writes every line that no run wrote. Only the block being written when a run stopped may be
written again: across the runs of a trial every distinct input line is written once or twice,
and the lines written twice fit in one block.

Each trial runs the CLI in a subprocess, stops it by one fault at a random moment (a random
amount of output written or read), then reruns it to completion with the same store, and checks
the union of the outputs. The default run has a few trials of each fault; `-m slow` runs 100.
"""

from __future__ import annotations

import collections
import errno
import fcntl
import os
import random
import resource
import signal
import subprocess
import sys
import termios
import time

import pytest

import cuckoo
from cuckoo import cli

BLOCK = 1 << 16  # many blocks per run, so that faults land inside the stream
# The stalled-reader faults use larger blocks: a block's output is then many times the pipe's
# capacity, so the writer is stopped in the middle of writing a block.
STALL_BLOCK = 1 << 20
DISTINCT = 60_000


def make_input(rng: random.Random) -> bytes:
    """~150,000 lines of 7-20 bytes, each of DISTINCT keys at least once, in random order."""
    keys = [b"%06d-%s" % (i, b"x" * rng.randrange(0, 12)) for i in range(DISTINCT)]
    lines = keys + [rng.choice(keys) for _ in range(90_000)]
    rng.shuffle(lines)
    return b"\n".join(lines) + b"\n"


def cli_cmd(store, *args, block: int = BLOCK) -> list:
    return [sys.executable, "-m", "cuckoo", "dedup", "--store", str(store), "--block-size", str(block), "-q",
            *map(str, args)]


def complete_lines(out: bytes) -> list:
    """The whole lines of one run's output (a line cut by the fault is not a line written)."""
    return out.split(b"\n")[:-1]


def wait_for_size(path, size: int, proc: subprocess.Popen) -> None:
    while proc.poll() is None:
        try:
            if os.path.getsize(path) >= size:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.0005)


def unread_bytes(fd: int) -> int:
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


def read_some(fd: int, n: int) -> bytes:
    """Up to n bytes from the pipe, blocking until n or end of file."""
    got = []
    while n > 0:
        piece = os.read(fd, min(n, 1 << 16))
        if not piece:
            break
        got.append(piece)
        n -= len(piece)
    return b"".join(got)


def stop_and_wait(pid: int) -> None:
    """SIGSTOP, then wait until every thread of the process is stopped (or it is gone). kill()
    returns before the stop takes effect: measured here, right after kill() returned, half the
    time a thread running on the other core had not stopped yet, and a writer that goes on for
    those microseconds can fill the pipe again after it was drained (the CI run of a4f3099 lost
    one block's lines that way: they reached the pipe, then the test closed it unread)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            states = []
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat") as fh:
                    states.append(fh.read().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):
            return  # exited (a thread that ended while listed, or the process)
        if all(s in "TtZX" for s in states):
            return
        time.sleep(0.0002)
    raise AssertionError(f"process {pid} did not stop within 30 s of SIGSTOP")


def drain(fd: int) -> bytes:
    """Everything the pipe holds now (the writer is stopped or gone)."""
    os.set_blocking(fd, False)
    got = []
    try:
        while True:
            piece = os.read(fd, 1 << 16)
            if not piece:
                break
            got.append(piece)
    except BlockingIOError:
        pass
    os.set_blocking(fd, True)
    return b"".join(got)


def faulty_run(kind: str, store, infile, tmp_path, rng: random.Random, expect: int) -> bytes:
    """One run of dedup --store stopped by `kind` at a random moment; returns what it wrote
    (what reached a file, or every byte the pipe's reader got or that the pipe held)."""
    at = rng.randrange(0, expect + 1)  # bytes of output before the fault
    if kind in ("kill", "int"):
        out = tmp_path / "faulty.out"
        proc = subprocess.Popen(cli_cmd(store, infile, "-o", out), stderr=subprocess.DEVNULL)
        wait_for_size(out, at, proc)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kind == "kill" else signal.SIGINT)
        proc.wait(timeout=60)
        return out.read_bytes() if out.exists() else b""
    if kind == "fsize":
        # RLIMIT_FSIZE: any write past `at` bytes fails with EFBIG (Python ignores SIGXFSZ): the
        # output or the store's log, whichever passes it first.
        out = tmp_path / "faulty.out"
        limit = max(at, 1)
        proc = subprocess.Popen(cli_cmd(store, infile, "-o", out), stderr=subprocess.DEVNULL,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
        proc.wait(timeout=60)
        return out.read_bytes() if out.exists() else b""
    # a pipe: the reader reads `at` bytes, then closes its end ("close"), or stops reading until
    # the writer blocks on the full pipe and is then killed or interrupted ("stall-kill",
    # "stall-int": a full output in the middle of a block).
    block = BLOCK if kind == "close" else STALL_BLOCK
    proc = subprocess.Popen(cli_cmd(store, infile, block=block), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    fd = proc.stdout.fileno()
    got = [read_some(fd, at)]
    if kind == "close":
        # Stop the writer, take what the pipe holds (handed to the OS: it counts as written),
        # close, let the writer go on: its next write finds no reader (EPIPE / SIGPIPE).
        if proc.poll() is None:
            stop_and_wait(proc.pid)
            got.append(drain(fd))
            proc.stdout.close()
            os.kill(proc.pid, signal.SIGCONT)
        else:
            got.append(drain(fd))
            proc.stdout.close()
        proc.wait(timeout=60)
        return b"".join(got)
    # Wait for the pipe to fill (a partly read page may keep it a page short of its capacity),
    # so that the writer is blocked in a write or about to be.
    capacity = fcntl.fcntl(fd, 1032)  # F_GETPIPE_SZ
    deadline = time.monotonic() + 30
    while proc.poll() is None and unread_bytes(fd) < capacity - 4096 and time.monotonic() < deadline:
        time.sleep(0.0005)
    time.sleep(0.01)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL if kind == "stall-kill" else signal.SIGINT)
    while True:  # what the pipe holds, and what an interrupted writer still flushes
        piece = os.read(fd, 1 << 16)
        if not piece:
            break
        got.append(piece)
    proc.stdout.close()
    proc.wait(timeout=60)
    return b"".join(got)


def check_trial(data: bytes, outputs: list, block: int) -> None:
    counts = collections.Counter(line for out in outputs for line in complete_lines(out))
    distinct = set(data.split(b"\n")[:-1])
    missing = distinct - set(counts)
    assert not missing, f"{len(missing)} distinct lines written by no run, e.g. {sorted(missing)[:3]}"
    assert set(counts) <= distinct
    twice = [k for k, c in counts.items() if c == 2]
    assert max(counts.values()) <= 2, "a line written more than twice"
    # only the block in flight when the run stopped repeats: at most a block's worth of lines
    assert len(twice) <= block // 8, f"{len(twice)} lines written twice: more than one block"


def trial(kind: str, seed: int, tmp_path) -> None:
    rng = random.Random(seed)
    data = make_input(rng)
    infile = tmp_path / "in.txt"
    infile.write_bytes(data)
    store = tmp_path / "seen.ckv"
    expect = sum(len(k) + 1 for k in set(data.split(b"\n")[:-1]))  # the bytes of the whole output
    outputs = [faulty_run(kind, store, infile, tmp_path, rng, expect)]
    final = subprocess.run(cli_cmd(store, infile), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert final.returncode == 0, final.stderr.decode(errors="replace")
    outputs.append(final.stdout)
    check_trial(data, outputs, STALL_BLOCK if kind.startswith("stall") else BLOCK)


KINDS = ["kill", "int", "close", "stall-kill", "stall-int", "fsize"]


@pytest.mark.parametrize("kind", KINDS)
def test_dedup_store_interrupted_then_rerun_loses_nothing(kind, tmp_path):
    trial(kind, 1000 + KINDS.index(kind), tmp_path)


@pytest.mark.slow
def test_dedup_store_hundred_fault_trials(tmp_path):
    for seed in range(100):
        d = tmp_path / f"t{seed}"
        d.mkdir()
        trial(KINDS[seed % len(KINDS)], seed, d)


def test_dedup_store_full_output_records_nothing(tmp_path):
    """The issue's case: -o /dev/full (ENOSPC at the first write) exits 4, and the rerun then
    writes all lines (f0df2c2 wrote 0 of 3: they were recorded as seen before the write)."""
    store = tmp_path / "d.ckv"
    full = subprocess.run(cli_cmd(store, "-o", "/dev/full"), input=b"a\nb\nc\n", stderr=subprocess.PIPE)
    assert full.returncode == 4 and b"No space left" in full.stderr
    rerun = subprocess.run(cli_cmd(store), input=b"a\nb\nc\n", stdout=subprocess.PIPE, check=True)
    assert rerun.stdout == b"a\nb\nc\n"


def test_dedup_filter_save_claims_only_written_lines(tmp_path):
    """The filter path's --save is written only after the whole output was handed to the OS: a
    failed output leaves the saved filter as it was, so the rerun writes the lines again."""
    saved = tmp_path / "seen.cuckoo"
    first = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "--save", saved, "--fpr", "1e-8"],
                           input=b"a\n", stdout=subprocess.PIPE, check=True)
    assert first.stdout == b"a\n"
    before = saved.read_bytes()
    args = [sys.executable, "-m", "cuckoo", "dedup", "--filter", saved, "--save", saved]
    full = subprocess.run(args + ["-o", "/dev/full"], input=b"a\nb\nc\n", stderr=subprocess.PIPE)
    assert full.returncode == 4 and saved.read_bytes() == before
    rerun = subprocess.run(args, input=b"a\nb\nc\n", stdout=subprocess.PIPE, check=True)
    assert rerun.stdout == b"b\nc\n"


# ---- refusals: an output that is one of the store's files, or a filter file -------------------


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "cuckoo", *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, env=env)


def test_output_that_is_a_store_file_is_refused(tmp_path):
    """f0df2c2: `store export s -o s` died of SIGBUS leaving a 0-byte log; `dedup --store d -o d`
    exited 0 having written lines over the store. Refused by file identity: through a symlink
    or a hard link too, and the snapshot and lock as well as the log."""
    store = tmp_path / "s.ckv"
    (tmp_path / "in.txt").write_bytes(b"a\nb\n")
    assert run_cli("dedup", "--store", store, "-q", tmp_path / "in.txt").returncode == 0
    (tmp_path / "link").symlink_to(store)
    os.link(store, tmp_path / "hard")
    (tmp_path / "idxlink").symlink_to(str(store) + ".idx")
    log = store.read_bytes()
    for out in (store, tmp_path / "link", tmp_path / "hard", str(store) + ".idx", str(store) + ".lock",
                tmp_path / "idxlink"):
        for args in (("store", "export", store, "-o", out),
                     ("dedup", "--store", store, tmp_path / "in.txt", "-o", out)):
            r = run_cli(*args)
            assert r.returncode == 1, (args, r.returncode, r.stderr)
            assert b"refusing to overwrite it" in r.stderr and r.stderr.count(b"\n") == 1
            assert store.read_bytes() == log
    assert run_cli("store", "export", store).stdout == b""  # a dedup store's values are empty
    assert run_cli("dedup", "--store", store, "-q", tmp_path / "in.txt").stdout == b""
    # the store cannot be an input of a command writing it
    r = run_cli("store", "import", store, tmp_path / "hard")
    assert r.returncode == 1 and b"refusing to read what it writes" in r.stderr and store.read_bytes() == log
    r = run_cli("dedup", "--store", store, tmp_path / "link")
    assert r.returncode == 1 and store.read_bytes() == log
    assert (tmp_path / "in.txt").read_bytes() == b"a\nb\n"


def test_output_that_is_a_filter_file_is_refused(tmp_path):
    (tmp_path / "in.txt").write_bytes(b"a\nb\n")
    saved = tmp_path / "f.cuckoo"
    assert run_cli("build", tmp_path / "in.txt", "-o", saved).returncode == 0
    before = saved.read_bytes()
    for args in (("dedup", tmp_path / "in.txt", "--filter", saved, "-o", saved),
                 ("dedup", tmp_path / "in.txt", "--save", saved, "-o", saved),
                 ("query", saved, tmp_path / "in.txt", "-o", saved),
                 ("build", tmp_path / "in.txt", "-o", tmp_path / "in.txt"),
                 ("dedup", tmp_path / "in.txt", "--save", tmp_path / "in.txt")):
        r = run_cli(*args)
        assert r.returncode == 1 and b"refusing to overwrite it" in r.stderr, (args, r.stderr)
    assert saved.read_bytes() == before and (tmp_path / "in.txt").read_bytes() == b"a\nb\n"


# ---- a line longer than the longest key a store holds ----------------------------------------


def test_line_longer_than_a_store_key_is_refused_early(tmp_path):
    """f0df2c2 buffered a 2 GiB line whole (6.5 GB RSS) before failing with a traceback. The
    limit (2**31 - 1 bytes, the store's) is lowered for the test; a line that never ends must
    be refused after about the limit was read, with the lines before it done."""
    env = dict(os.environ, CUCKOO_TEST_MAX_KEY="100000")
    # a line longer than a block (found while it is being read) and one shorter than a block
    for block, long_len in ((4096, 250_000), (1 << 20, 100_001)):
        data = b"a\nb\n" + b"x" * long_len + b"\nc\n"
        (tmp_path / "in.txt").write_bytes(data)
        store = tmp_path / f"s{block}.ckv"
        r = subprocess.run(cli_cmd(store, tmp_path / "in.txt", block=block), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env)
        assert r.returncode == 1 and r.stderr.count(b"\n") == 1, r.stderr
        assert b"input line 3 is longer than 100,000 bytes" in r.stderr
        assert r.stdout == b"a\nb\n"  # the lines before it are done: written and recorded
        assert sorted(cuckoo.Store(store, readonly=True)) == [b"a", b"b"]
    # a line of exactly the limit is a key (+ '\r' before its '\n')
    (tmp_path / "ok.txt").write_bytes(b"y" * 100_000 + b"\r\nz\n")
    r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "--exact", "--block-size", "4096",
                        tmp_path / "ok.txt"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert r.returncode == 0 and r.stdout == (tmp_path / "ok.txt").read_bytes()
    # a line that never ends: refused once the limit is passed, not read forever; the address
    # space is limited so that a reader that buffers it all fails instead of eating the machine
    producer = subprocess.Popen([sys.executable, "-c", "import sys\nw = sys.stdout.buffer\nw.write(b'p\\n')\n"
                                 "while True: w.write(b'y' * 65536)"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    try:
        r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "--exact", "-q"], stdin=producer.stdout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)))
    finally:
        producer.kill()
        producer.wait()
        producer.stdout.close()
    assert r.returncode == 1 and b"input line 2 is longer than 100,000 bytes" in r.stderr, r.stderr
    assert r.stdout == b"p\n"


def test_the_line_limit_is_the_store_key_limit(monkeypatch):
    """Without the test override the limit is the store's (docs/store.md: keys < 2**31 bytes),
    and the override can only lower it."""
    monkeypatch.delenv("CUCKOO_TEST_MAX_KEY", raising=False)
    assert cli.max_store_key() == cli.MAX_STORE_KEY == 2**31 - 1
    monkeypatch.setenv("CUCKOO_TEST_MAX_KEY", str(2**40))
    assert cli.max_store_key() == 2**31 - 1


# ---- store subcommands: exit 2 and one line for a store that cannot be opened or used --------


STORE_OPS = [("get", "k"), ("get", "--int", "7"), ("put", "k", "v"), ("del", "k"), ("info",), ("info", "--json"),
             ("export",), ("export", "--tsv"), ("compact",), ("import", os.devnull)]


def test_store_subcommands_on_an_oversized_snapshot_have_no_traceback(tmp_path):
    """f0df2c2: an oversized STORE.idx (a sparse 1 TiB file) made every subcommand end in a
    MemoryError traceback with exit 1. Whether a store opens despite such a snapshot is the
    store's business; the CLI must answer on one line, exit 2 when it cannot open it."""
    store = tmp_path / "s.ckv"
    with cuckoo.Store(store) as s:
        s["k"] = b"v"
    with open(str(store) + ".idx", "r+b") as fh:
        fh.truncate(1 << 40)
    for op, *rest in STORE_OPS:
        r = run_cli("store", op, store, *rest)
        assert b"Traceback" not in r.stderr, (op, r.stderr)
        if r.returncode not in (0, 1):
            assert r.returncode == 2 and r.stderr.count(b"\n") == 1, (op, r.stderr)


class _Broken:
    """A stand-in for cuckoo.Store whose open or whose every operation raises `exc`."""

    def __init__(self, exc, at_open):
        self.exc, self.at_open = exc, at_open

    def __call__(self, path, readonly=False):
        if self.at_open:
            raise self.exc
        return self

    def __getattr__(self, name):
        if name == "close":
            return lambda: None
        raise self.exc

    def __len__(self):
        raise self.exc

    def __setitem__(self, key, value):
        raise self.exc


@pytest.mark.parametrize("exc", [MemoryError("std::bad_alloc"), OSError(errno.EIO, "Input/output error"),
                                 OSError(errno.ENOSPC, "No space left on device"),
                                 cuckoo.FormatError("the store's log is corrupt at offset 80")])
@pytest.mark.parametrize("at_open", [True, False])
def test_every_store_subcommand_reports_store_failures_on_one_line(exc, at_open, tmp_path, monkeypatch, capfd):
    """Whatever fails in a store (its open, a read, a write, close) is one line and exit 2, as the
    help says, for every subcommand (f0df2c2 let MemoryError and errors after the open through
    as tracebacks with exit 1)."""
    monkeypatch.setattr(cuckoo, "Store", _Broken(exc, at_open))
    for op, *rest in STORE_OPS:
        code = cli.main(["store", op, str(tmp_path / "s.ckv"), *rest])
        err = capfd.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "store" in err, (op, code, err)


def test_store_get_int_key_out_of_range_is_a_usage_error(tmp_path):
    store = tmp_path / "s.ckv"
    with cuckoo.Store(store):
        pass
    r = run_cli("store", "get", store, "--int", str(2**70))
    assert r.returncode == 1 and b"64 bits" in r.stderr and b"Traceback" not in r.stderr


def test_dedup_store_write_failure_is_one_line(tmp_path, capfd):
    """A store that cannot record a block (ENOSPC when the block's batch commits, injected by
    the store's test hook) after the block was written: exit 2 on one line, the lines written,
    the store without them, so the rerun writes them again."""
    from cuckoo import _core

    store = tmp_path / "d.ckv"
    with cuckoo.Store(store):
        pass
    (tmp_path / "in.txt").write_bytes(b"a\nb\n")
    # The second write of the store's files fails: the first is the run journal's start point
    # (cuckoo._dedup.resume), the second the block's batch.
    _core._testing_io_fault(2, errno.ENOSPC, False)
    try:
        code = cli.main(["dedup", "--store", str(store), "-q", "-o", str(tmp_path / "out1"),
                         str(tmp_path / "in.txt")])
    finally:
        _core._testing_io_fault(0, 0, False)
    err = capfd.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "No space left" in err, err
    assert (tmp_path / "out1").read_bytes() == b"a\nb\n"
    assert len(cuckoo.Store(store, readonly=True)) == 0
    code = cli.main(["dedup", "--store", str(store), "-q", "-o", str(tmp_path / "out2"), str(tmp_path / "in.txt")])
    assert code == 0 and (tmp_path / "out2").read_bytes() == b"a\nb\n"
    # The same run again, into out1: the journal's point is the start (the batch never
    # committed), so the rerun cuts out1 back to nothing and writes it once. (out2's run recorded
    # a and b in the store since: the journal belongs to that run now, so out1's rerun is a new
    # run and finds both keys seen.)
    code = cli.main(["dedup", "--store", str(store), "-q", "-o", str(tmp_path / "out1"), str(tmp_path / "in.txt")])
    assert code == 0 and (tmp_path / "out1").read_bytes() == b""
