"""The dedup pipeline under faults of its inputs and outputs (cuckoo.dedup and the CLI).

- An input that cannot be opened or read: cuckoo.dedup() raises the OSError of its errno naming
  the file (FileNotFoundError, IsADirectoryError, ...); the CLI prints one line and exits 1.
- A kept or dropped output that fails (ENOSPC from /dev/full, EIO from a pty whose master is
  closed, EPIPE from a reader that goes away): an OSError with its errno and `cuckoo_side`, with 1
  and 2 threads (with 2, the writes are made by the writer thread and rethrown by the applying
  one); the CLI exits 4 with one line; a --store records no line that was not written, so a rerun
  writes every line no run wrote.
- Allocation failure at each allocation of the pipeline's block buffers (cuckoo._core's
  _fail_allocation hook, fault.hpp): MemoryError, and a --store records nothing of the block.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading

import pytest

import cuckoo
from cuckoo import _core

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the native pipeline reads and writes POSIX fds")

# exact: the in-memory key set in one pass; exact-passes: the same with a budget (64 KiB) that
# makes it read the input in several passes (cpp/include/cuckoo/dedup.hpp, with_key_set).
MODES = ["filter", "exact", "exact-passes", "exact-read-once", "store"]


def data_lines(n=30_000, distinct=9_000):
    return [b"%06d-line\n" % ((i * 7919) % distinct) for i in range(n)]


def run(mode, source, out, tmp_path, **kw):
    if mode == "filter":
        return cuckoo.dedup(source, out, fpr=1e-8, **kw)
    if mode == "exact":
        return cuckoo.dedup(source, out, exact=True, **kw)
    if mode == "exact-passes":
        r = cuckoo.dedup(source, out, exact=True, memory=1 << 16, **kw)
        assert r.exact_stats["passes"] > 1
        return r
    if mode == "exact-read-once":  # compressed input: read once, its keys past --memory moved to a store
        r = cuckoo.dedup(gzipped(source), out, exact=True, memory=1 << 16, **kw)
        assert r.exact_stats["read_once"] and r.exact_stats["spilled_at_line"] > 0
        return r
    return cuckoo.dedup(source, out, store=tmp_path / "seen.ckv", **kw)


def gzipped(source):
    """The regular files among `source` (a path or a list of them) as .gz files beside them."""
    import gzip

    if isinstance(source, list):
        return [gzipped(s) for s in source]
    if not os.path.isfile(source):
        return source
    gz = source + ".gz"
    with open(source, "rb") as src, open(gz, "wb") as dst:
        dst.write(gzip.compress(src.read(), compresslevel=1))
    return gz


def store_keys(tmp_path):
    with cuckoo.Store(tmp_path / "seen.ckv", readonly=True) as s:
        return set(s)


def sweep_allocations(tmp_path, want, run_once, store_keys_of=None):
    """Fails the n-th hooked allocation of run_once(dir, out) for n = 1, 2, ... until a run gets
    past every one: each failure a MemoryError, the output a prefix of `want` (its lines), and
    with `store_keys_of` (lines written -> their keys) a store holding only keys written. Returns
    (n, the output path of the run that went through)."""
    n = 1
    while True:
        d = tmp_path / f"try{n}"
        d.mkdir()
        out = d / "out.txt"
        _core._fail_allocation(n)
        try:
            run_once(d, out)
        except MemoryError:
            _core._fail_allocation(0)
            got = out.read_bytes().splitlines(keepends=True) if out.exists() else []
            assert got == want[:len(got)], f"allocation {n}: the output is not a prefix of the reference"
            if store_keys_of is not None and (d / "seen.ckv").exists():
                assert store_keys(d) <= store_keys_of(got), f"allocation {n}: recorded, not written"
            n += 1
            continue
        finally:
            _core._fail_allocation(0)
        return n, out


@pytest.fixture
def infile(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(data_lines()))
    return path


# ---- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_an_unreadable_input_raises_the_oserror_naming_it(tmp_path, infile, mode):
    """(It raised the CLI's CliError, with the errno and its type lost.)"""
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError) as info:
        run(mode, missing, None, tmp_path)
    assert info.value.filename == missing and info.value.errno == errno.ENOENT
    with pytest.raises(IsADirectoryError) as info:
        run(mode, str(tmp_path), None, tmp_path)
    assert info.value.filename == str(tmp_path)
    with pytest.raises(FileNotFoundError) as info:  # the second of two inputs
        run(mode, [str(infile), missing], None, tmp_path)
    assert info.value.filename == missing


def test_the_cli_still_reports_an_unreadable_input_on_one_line(tmp_path):
    for extra in ([], ["--exact"]):
        r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *extra, str(tmp_path / "missing.txt")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 1 and err.count("\n") == 1 and "missing.txt" in err and "No such file" in err, err


# ---- outputs ------------------------------------------------------------------------------------


def broken_tty():
    """A writable binary file object whose writes fail with EIO (a pty whose master is closed)."""
    master, slave = os.openpty()
    os.close(master)
    return os.fdopen(slave, "wb", buffering=0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("side", ["output", "dropped"])
def test_a_failed_output_raises_its_oserror_and_records_nothing(tmp_path, infile, mode, threads, side):
    if side == "output":
        out, dropped, code = "/dev/full", None, errno.ENOSPC
    else:
        out, dropped, code = tmp_path / "out.txt", broken_tty(), errno.EIO
    try:
        with pytest.raises(OSError) as info:
            run(mode, str(infile), out, tmp_path, dropped=dropped, threads=threads, block_size=1 << 14)
    finally:
        if dropped is not None:
            dropped.close()
    assert info.value.errno == code and info.value.cuckoo_side == side  # type: ignore[attr-defined]
    if mode == "store":
        recorded = store_keys(tmp_path)
        if side == "output":  # the first block's write failed: its batch never committed
            assert recorded == set()
        else:  # the blocks before the first with a dropped line were written whole, and recorded
            assert recorded <= set(out.read_bytes().split(b"\n")[:-1])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_dropped_reader_gone_mid_run_leaves_only_written_lines_in_the_store(tmp_path, infile, threads):
    """The dropped output is a pipe whose reader stops after some bytes: EPIPE in the middle of
    the run. The store then holds only lines of blocks written whole to both outputs, so the
    rerun (with the same store) writes every distinct line the first run did not."""
    lines = data_lines()
    rfd, wfd = os.pipe()
    got = []

    def reader():
        with os.fdopen(rfd, "rb", buffering=0) as r:
            got.append(r.read(50_000))  # then close: the writer's next write finds no reader

    t = threading.Thread(target=reader)
    t.start()
    first = tmp_path / "first.txt"
    try:
        with os.fdopen(wfd, "wb", buffering=0) as w, pytest.raises(BrokenPipeError) as info:
            run("store", str(infile), first, tmp_path, dropped=w, threads=threads, block_size=1 << 14)
    finally:
        t.join()
    assert info.value.cuckoo_side == "dropped"  # type: ignore[attr-defined]
    written = set(first.read_bytes().split(b"\n")[:-1])
    recorded = store_keys(tmp_path)
    assert recorded and recorded <= written  # mid-run, and nothing recorded that was not written
    second = tmp_path / "second.txt"
    run("store", str(infile), second, tmp_path, threads=threads, block_size=1 << 14)
    again = set(second.read_bytes().split(b"\n")[:-1])
    assert written | again == {x.rstrip(b"\n") for x in lines}
    assert not recorded & again


@pytest.mark.parametrize("mode", [[], ["--exact"], ["--store", "STORE"]])
def test_the_cli_reports_a_full_dropped_output_on_one_line(tmp_path, infile, mode):
    store = tmp_path / "seen.ckv"
    args = [str(store) if a == "STORE" else a for a in mode]
    r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *args, "--dropped", "/dev/full", "-o",
                        str(tmp_path / "out.txt"), str(infile)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 4 and err.count("\n") == 1 and "No space left" in err and "Traceback" not in err, err
    if mode and mode[0] == "--store":
        assert store_keys(tmp_path) == set()


# ---- allocation failure -------------------------------------------------------------------------


@pytest.mark.parametrize("mode,threads", [(m, t) for m in MODES for t in (1, 2)])
def test_allocation_failure_at_each_site_raises_memoryerror_and_records_only_written_lines(
        tmp_path, infile, mode, threads):
    """Fails each hooked allocation a run reaches in turn (the table or store, then the pipeline's
    blocks, their line, key and hash arrays, the carry and the output buffer): each time a
    MemoryError, an output that is a prefix of the reference, and a store holding only lines that
    output has; then the run that gets past every allocation gives the whole reference."""
    want = []
    seen = set()
    for line in data_lines():
        if line not in seen:
            seen.add(line)
            want.append(line)
    n, out = sweep_allocations(tmp_path, want, lambda d, out: run(mode, str(infile), out, d, threads=threads,
                                                                    block_size=1 << 14),
                               (lambda got: {x.rstrip(b"\n") for x in got}) if mode == "store" else None)
    assert out.read_bytes() == b"".join(want)
    # The sweep reached the pipeline's buffers, not only the table or store (without their hooks it
    # ends at 2, 4, 4 and 6 here: the key set's index, chunk list, chunk and a pass's key list),
    # and with several passes those of every pass.
    assert n > {"filter": 8, "exact": 10, "exact-passes": 40, "exact-read-once": 12, "store": 12}[mode]


KEYED = {
    "csv": (dict(csv=True, key="k"), b"k,v\n", lambda i, k: b'%012d,"v %d"\n' % (k, i)),
    "jsonl": (dict(jsonl=True, key="user.id"), b"", lambda i, k: b'{"user": {"id": "%012d"}, "i": %d}\n' % (k, i)),
}


@pytest.mark.parametrize("framing", sorted(KEYED))
@pytest.mark.parametrize("mode,threads", [("exact", 1), ("exact-passes", 2), ("store", 1), ("store", 2),
                                          ("filter", 2)])
def test_allocation_failure_in_keyed_records_raises_memoryerror_and_records_only_written_ones(
        tmp_path, framing, mode, threads):
    """The sweep above over CSV and JSON Lines records (their keys' buffer and key references
    included): each failure a MemoryError, the output a prefix of the reference (the CSV header
    first), a store holding only keys of records written; then the whole reference."""
    kw, header, record = KEYED[framing]
    keys = [(i * 7919) % 9000 for i in range(20000)]  # (distinct keys past exact-passes' 64 KiB)
    src = tmp_path / "in.txt"
    src.write_bytes(header + b"".join(record(i, k) for i, k in enumerate(keys)))
    want, seen = [header] if header else [], set()
    for i, k in enumerate(keys):
        if k not in seen:
            seen.add(k)
            want.append(record(i, k))
    def written(got):  # (a JSON string's key keeps its quotes: "1" and 1 are other keys)
        return {line.split(b",")[0] if framing == "csv" else line.split(b'"id": ')[1][:14]
                for line in got[1 if header else 0:]}

    n, out = sweep_allocations(tmp_path, want, lambda d, out: run(mode, str(src), out, d, threads=threads,
                                                                    block_size=1 << 13, **kw),
                               written if mode == "store" else None)
    assert out.read_bytes() == b"".join(want)
    assert n > 6, n  # (the sweep reached the pipeline's keyed buffers, not only the table or store)


@pytest.mark.parametrize("how,threads", [(dict(count=True), 1), (dict(count=True, keep="last"), 2),
                                         (dict(repeated=True, memory=1 << 16), 2), (dict(window=300), 1),
                                         (dict(window=300, exact=False, seed=5), 2), (dict(window="1h"), 2)])
def test_allocation_failure_with_counts_and_windows_raises_memoryerror(tmp_path, infile, how, threads):
    """The sweep over the counted runs (their key sets with values, pick lists, count arrays, the
    formatted output; several hash ranges under 64 KiB) and the windowed ones (the window's
    generations, the verdict and time arrays): each failure a MemoryError and no output file (it
    is written whole or not at all); then the output of a run without faults."""
    clean = tmp_path / "clean.txt"
    cuckoo.dedup(str(infile), clean, threads=threads, block_size=1 << 14, **how)
    want = clean.read_bytes().splitlines(keepends=True)
    n, out = sweep_allocations(tmp_path, want, lambda d, out: cuckoo.dedup(str(infile), out, threads=threads,
                                                                             block_size=1 << 14, **how))
    assert out.read_bytes() == b"".join(want)
    assert n > 4, n  # (the sweep reached the pipeline's buffers)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_write_of_the_store_that_keys_moved_to_raises_and_leaves_a_prefix(tmp_path, infile, threads):
    """Input read once whose keys passed --memory goes on in a store on an anonymous file: each of
    that store's writes fails in turn (ENOSPC, the store's test hook): an OSError of that errno,
    and an output that is a prefix of the reference; then the run that gets past them all."""
    want = b"".join(dict.fromkeys(data_lines()))
    n = 1
    while True:
        out = tmp_path / f"out{n}.txt"
        _core._testing_io_fault(n, errno.ENOSPC, False)
        try:
            run("exact-read-once", str(infile), out, tmp_path, threads=threads, block_size=1 << 14)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            got = out.read_bytes() if out.exists() else b""
            assert want.startswith(got), f"write {n}: the output is not a prefix of the reference"
            n += 1
            continue
        finally:
            _core._testing_io_fault(0, 0, False)
        break
    assert out.read_bytes() == want
    assert n > 1  # (the store wrote, and its writes failed)
    r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "--exact", "--memory", "64K", "-o", "/dev/full",
                        gzipped(str(infile))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 4 and err.count("\n") == 1 and "No space left" in err and "Traceback" not in err, err


@pytest.mark.parametrize("threads", [1, 2])
def test_a_full_filter_ends_the_run_while_its_input_pipe_stays_open(threads):
    """The filter fills while the input is a pipe that stays open with no more data: the run ends
    (exit 3) at once, not when the pipe closes. (With 2 threads one thread reads and writes; it
    sat in the read of the pipe while the applying thread waited for it to write the last
    blocks.)"""
    import os
    import threading

    # 13,500 lines of 15 bytes: three whole blocks of 64 KiB (4,369 lines each) and part of a
    # fourth, whose read then waits on the pipe; a filter sized for 10,000 lines fills near line
    # 10,900, in the third block, while that read waits.
    lines = b"".join(b"line-%09d\n" % i for i in range(13500))
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "-q", "--capacity", "10000", "--threads",
                             str(threads), "--block-size", "65536"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    released = threading.Event()

    def feed():  # the lines, then the pipe held open until the run ends (or the guard below)
        try:
            proc.stdin.write(lines)
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        released.wait(60)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        rc = proc.wait(timeout=60)  # (a hang guard, not a time limit)
        open_at_exit = not released.is_set()
    except subprocess.TimeoutExpired:
        rc, open_at_exit = None, True
    finally:
        released.set()
        feeder.join()
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        if proc.poll() is None:
            proc.wait()
        err = proc.stderr.read()
        proc.stderr.close()
    assert rc == 3 and open_at_exit, (rc, err)
    assert b"full" in err


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", [["--fpr", "1e-8"], ["--exact"]])
def test_the_lines_of_a_live_stream_come_out_while_its_pipe_stays_open(threads, mode):
    """`tail -f log | cuckoo dedup`: the lines that came through the pipe come out (about a tick
    later) while it stays open, not once two blocks (the estimate's head) or a block (the
    pipeline's read) filled or the pipe closed."""
    import os
    import selectors

    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "-q", *mode, "--threads", str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read_until(want: bytes) -> bytes:  # (60 s: a hang guard, not a time limit)
        got = b""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while len(got) < len(want) and sel.select(timeout=60):
                piece = os.read(proc.stdout.fileno(), 4096)
                if not piece:
                    break
                got += piece
        return got

    try:
        proc.stdin.write(b"a\nb\na\nc")
        proc.stdin.flush()
        first = read_until(b"a\nb\n")
        proc.stdin.write(b"\nb\nd\n")
        proc.stdin.flush()
        second = read_until(b"c\nd\n")
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        err = proc.stderr.read()
        rc = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert (first, second, rest) == (b"a\nb\n", b"c\nd\n", b""), err
    assert rc == 0, err


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", [["--fpr", "1e-8"], ["--exact"]])
def test_ctrl_c_stops_a_run_whose_output_stalls(tmp_path, infile, threads, mode):
    """Nobody reads the output pipe: the write (with 2 threads, the writer thread's) waits, the
    applying thread fills the writer's queue and waits too, looking at the signals; Ctrl-C then
    ends the run with exit 130, the writer thread stopped with it. (The writer, which blocks every
    signal, sat in a write() no EINTR ends and the run hung at the join.)"""
    import signal
    import time

    big = tmp_path / "big.txt"
    big.write_bytes(infile.read_bytes() * 20)
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", *mode, "-q", "--threads", str(threads),
                             "--block-size", "65536", str(big)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        first = proc.stdout.read(1)  # the run has started writing; now the pipe fills and stalls
        time.sleep(1.0)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        proc.wait(timeout=60)  # (a hang guard, not a time limit)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert first and proc.returncode == 130 and b"interrupted" in err, err
