"""The main job's outputs are whole, and no run overwrites one of its own files
(cuckoo._dedup.outputs): the clobber matrix of the CLI and the API, and every failure of a run
leaving its file targets as they were."""

from __future__ import annotations

import gzip
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

import cuckoo
from cuckoo._dedup.outputs import ClobberError

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX file identity and signals")

DATA = b"".join(b"%d\n" % (i % 300) for i in range(3000))


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "cuckoo", *map(str, args)], capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, **kw)


def files_of(d):
    """Every file of directory d with its bytes (what a refused or failed run must not change)."""
    return {p: (d / p).read_bytes() if (d / p).is_file() else None for p in sorted(os.listdir(d))}


@pytest.fixture
def inp(tmp_path):
    p = tmp_path / "in.txt"
    p.write_bytes(DATA)
    return p


# ---- the clobber matrix ----


def api_cases(tmp_path, inp):
    link = tmp_path / "link.txt"
    link.symlink_to(inp)
    hard = tmp_path / "hard.txt"
    os.link(inp, hard)
    out = tmp_path / "out.txt"
    out.write_bytes(b"old\n")
    out_link = tmp_path / "out-link.txt"
    out_link.symlink_to(out)
    store = tmp_path / "s.ckv"
    return [
        dict(source=inp, out=inp),
        dict(source=inp, out=link),
        dict(source=inp, out=hard),
        dict(source=[tmp_path / "other.txt", inp], out=hard),
        dict(source=inp, out=tmp_path / "o.txt", dropped=inp),
        dict(source=inp, out=out, dropped=out_link),
        dict(source=inp, out=out, dropped=out),
        dict(source=inp, out=store, store=store),
        dict(source=inp, out=out, dropped=str(store) + ".idx", store=store),
        dict(source=store, out=out, store=store),
    ]


@pytest.mark.parametrize("case", range(10))
def test_the_api_refuses_to_overwrite_its_own_files(tmp_path, inp, case):
    (tmp_path / "other.txt").write_bytes(b"x\n")
    kw = api_cases(tmp_path, inp)[case]
    before = files_of(tmp_path)
    with pytest.raises(ClobberError, match=r"^cuckoo\.dedup: .* is also .*: refusing to (overwrite|read)"):
        cuckoo.dedup(kw.pop("source"), kw.pop("out"), **kw)
    assert files_of(tmp_path) == before  # nothing opened, nothing written
    assert issubclass(ClobberError, ValueError)


CLI_CASES = [
    ("-o", "{in}"),
    ("-o", "{link}"),
    ("--dropped", "{in}"),
    ("-o", "{out}", "--dropped", "{outlink}"),
    ("-o", "{out}", "--dropped", "{out}"),
    ("--approx", "--filter", "{f}", "--dropped", "{f}"),
    ("--approx", "--save", "{f}", "--dropped", "{f}"),
    ("--approx", "--save", "{f}", "-o", "{f}"),
    ("--approx", "--save", "{in}"),
    ("--store", "{s}", "-o", "{s}"),
    ("--store", "{s}", "--dropped", "{s}.idx"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: " ".join(c))
def test_the_cli_refuses_to_overwrite_its_own_files(tmp_path, inp, case):
    out = tmp_path / "out.txt"
    out.write_bytes(b"old\n")
    (tmp_path / "link.txt").symlink_to(inp)
    (tmp_path / "out-link.txt").symlink_to(out)
    f = tmp_path / "seen.cuckoo"
    cuckoo.Filter(100).save(str(f))
    names = {"in": inp, "link": tmp_path / "link.txt", "out": out, "outlink": tmp_path / "out-link.txt", "f": f,
             "s": tmp_path / "s.ckv"}
    args = [a.format(**names) for a in case]
    before = files_of(tmp_path)
    p = cli("dedup", *args, inp)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.count("\n") == 1 and "refusing" in err and "Traceback" not in err, err
    assert files_of(tmp_path) == before


def test_filter_read_and_saved_in_place_is_allowed(tmp_path, inp):
    f = tmp_path / "seen.cuckoo"
    for day in (1, 2):  # day one: the filter file does not exist yet
        p = cli("dedup", "-q", "--filter", f, "--save", f, inp, "-o", tmp_path / f"new{day}.txt")
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "new1.txt").read_bytes().count(b"\n") == 300
    assert (tmp_path / "new2.txt").read_bytes() == b""


# ---- whole outputs ----


def test_a_new_output_gets_the_mode_of_a_new_file_and_an_old_one_keeps_its_own(tmp_path, inp):
    out = tmp_path / "out.txt"
    umask = os.umask(0o022)
    try:
        cuckoo.dedup(inp, out)
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
        os.chmod(out, 0o600)
        cuckoo.dedup(inp, out)
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    finally:
        os.umask(umask)
    assert out.read_bytes() == b"".join(b"%d\n" % i for i in range(300))


def test_an_output_through_a_symlink_replaces_the_file_it_names(tmp_path, inp):
    real = tmp_path / "real.txt"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    cuckoo.dedup(inp, link)
    assert link.is_symlink() and real.read_bytes().count(b"\n") == 300


@pytest.mark.parametrize("failure", ["invalid-csv", "truncated-gzip", "missing-second-input", "file-too-large"])
@pytest.mark.parametrize("mode", [["--exact"], ["--approx"]])
def test_a_failed_run_leaves_its_outputs_as_they_were(tmp_path, failure, mode):
    out, drop = tmp_path / "out.csv", tmp_path / "drop.csv"
    out.write_bytes(b"old output\n")
    args = []
    if failure == "invalid-csv":
        src = tmp_path / "in.csv"
        src.write_bytes(b"k,v\n" + b"".join(b"%d,x\n" % (i % 50) for i in range(20000)) + b'1,"x"y\n')
        args = ["--csv", "-k", "k", src]
    elif failure == "truncated-gzip":
        src = tmp_path / "in.gz"
        src.write_bytes(gzip.compress(DATA * 50)[:-100])
        args = [src]
    elif failure == "missing-second-input":
        src = tmp_path / "in.txt"
        src.write_bytes(DATA)
        args = [src, tmp_path / "nope.txt"]
    else:
        src = tmp_path / "in.txt"
        src.write_bytes(b"".join(b"%d\n" % i for i in range(200_000)))
        args = [src]
    before = files_of(tmp_path)
    if failure == "file-too-large":  # the output passes RLIMIT_FSIZE (as a full disk would stop it)
        import resource

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

        p = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *mode, "-o", str(out), "--dropped", str(drop),
                            *map(str, args)], capture_output=True, timeout=120, preexec_fn=limit,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    else:
        p = cli("dedup", *mode, "-o", out, "--dropped", drop, *args)
    err = p.stderr.decode()
    assert p.returncode in (1, 4) and "Traceback" not in err and err.count("\n") == 1, err
    assert files_of(tmp_path) == before  # the old output as it was, no dropped file, no temporary file


# The modes that write as they read (plain dedup, a window) and those that read everything first (a
# count, keep last: the pipe is copied to a temporary file, then read twice).
INTERRUPTED_MODES = [[], ["-c"], ["--keep", "last"], ["--window", "100"]]


@pytest.mark.parametrize("mode", INTERRUPTED_MODES, ids=lambda m: " ".join(m) or "plain")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_its_outputs_as_they_were(tmp_path, sig, mode):
    out = tmp_path / "out.txt"
    out.write_bytes(b"old output\n")
    spool = tmp_path / "spool"  # $TMPDIR: where a count copies its pipe; nothing may stay there
    spool.mkdir()
    before = files_of(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "-q", *mode, "-o", str(out)],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(spool)})
    proc.stdin.write(DATA * 2000)  # then the pipe stalls: the run waits, its output half written
    proc.stdin.flush()
    time.sleep(1.5)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    proc.stdin.close()
    assert proc.returncode != 0
    assert files_of(tmp_path) == before
    assert os.listdir(spool) == []


def test_a_count_whose_copy_of_its_pipe_fails_leaves_its_outputs_as_they_were(tmp_path):
    # -c copies a pipe to a temporary file to read it twice: that copy passes RLIMIT_FSIZE (as a
    # full $TMPDIR would stop it) before anything else is written.
    import resource

    out = tmp_path / "out.txt"
    out.write_bytes(b"old output\n")
    spool = tmp_path / "spool"
    spool.mkdir()
    before = files_of(tmp_path)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    p = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", "-c", "-o", str(out)],
                       input=b"".join(b"%d\n" % (i % 5000) for i in range(60_000)), capture_output=True,
                       timeout=120, preexec_fn=limit,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(spool)})
    err = p.stderr.decode()
    assert p.returncode == 4 and err.count("\n") == 1, err
    assert err.startswith("cuckoo: cannot copy input '-' to a temporary file in ") and "File too large" in err, err
    assert files_of(tmp_path) == before
    assert os.listdir(spool) == []


def test_devices_are_written_in_place(tmp_path, inp):
    assert cli("dedup", "-q", inp, "-o", os.devnull).returncode == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    if os.path.exists("/dev/full"):
        p = cli("dedup", "-q", inp, "-o", "/dev/full")
        assert p.returncode == 4 and b"No space left" in p.stderr
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # still the device, never replaced by a file


@pytest.mark.parametrize("args, message", [
    (["--threads", "100000"], "--threads: at most"),
    (["--block-size", "99999999999999"], "--block-size: at most 1G"),
    (["--block-size", "2G"], "--block-size: at most 1G"),
    (["--block-size", "0"], "--block-size: must be positive"),
    (["--block-size", "lots"], "--block-size: not a size"),
    (["--approx", "--fpr", "1e-12"], "--fpr: fpr is too small"),
    (["--approx", "--capacity", "5e12"], "capacity is too large"),
    (["--exact", "--fpr", "1e-3"], "--fpr is for the filter"),
])
def test_out_of_range_options_are_one_line_errors(inp, tmp_path, args, message):
    p = cli("dedup", *args, inp, "-o", tmp_path / "out.txt")
    err = p.stderr.decode().strip().splitlines()
    assert p.returncode == 1 and message in err[-1] and "Traceback" not in p.stderr.decode(), err
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("mode", ["--exact", "--approx"])
def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path, threads, mode):
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"%d\n" % i for i in range(300_000)))
    p = subprocess.run(f"{sys.executable} -m cuckoo dedup {mode} --threads {threads} {src} | head -1",
                       shell=True, capture_output=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.stdout == b"0\n" and p.stderr == b""


@pytest.mark.parametrize("mode", INTERRUPTED_MODES, ids=lambda m: " ".join(m) or "plain")
def test_a_killed_run_leaves_the_old_output_and_the_next_run_no_temporary_file(tmp_path, mode):
    """SIGKILL cannot be caught: the old output stays (the new one was a temporary file), and
    where the temporary file had a name (no O_TMPFILE here), the next run writing beside it
    removes it (its process is gone)."""
    out = tmp_path / "out.txt"
    out.write_bytes(b"old output\n")
    spool = tmp_path / "spool"  # $TMPDIR: a count's copy of its pipe is an unnamed file, gone with it
    spool.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "cuckoo", "dedup", "-q", *mode, "-o", str(out)],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(spool)})
    proc.stdin.write(DATA * 2000)  # then the pipe stalls: the run waits, its output half written
    proc.stdin.flush()
    time.sleep(1.5)
    proc.kill()
    proc.communicate(timeout=60)
    proc.stdin.close()
    assert out.read_bytes() == b"old output\n"
    assert os.listdir(spool) == []
    from cuckoo._dedup.outputs import _unnamed_files_work

    left = [n for n in os.listdir(tmp_path) if n.endswith(".cuckoo-tmp")]
    assert len(left) == (0 if _unnamed_files_work(str(tmp_path)) else 1), left
    inp = tmp_path / "in.txt"
    inp.write_bytes(DATA)
    p = cli("dedup", "-q", "-o", out, inp)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == b"".join(b"%d\n" % i for i in range(300))
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".cuckoo-tmp")], os.listdir(tmp_path)


def test_only_temporary_files_of_gone_processes_are_removed(tmp_path):
    from cuckoo._dedup.outputs import _remove_stale_temporaries

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    names = [f".out.txt.{dead_pid}.abc.cuckoo-tmp", f".out.txt.{os.getpid()}.abc.cuckoo-tmp",
             ".out.txt.1.abc.cuckoo-tmp",  # (pid 1 is alive)
             f".other.txt.{dead_pid}.abc.cuckoo-tmp", f".out.txt.{dead_pid}.abc"]
    for n in names:
        (tmp_path / n).write_bytes(b"x")
    _remove_stale_temporaries(str(tmp_path), "out.txt")
    assert sorted(os.listdir(tmp_path)) == sorted(names[1:])


def test_block_size_takes_the_suffixes_memory_takes(tmp_path, inp):
    for size in ("64K", "1m", "65536", "1_048_576", "0.5M"):
        p = cli("dedup", "-q", "--block-size", size, inp, "-o", tmp_path / "out.txt")
        assert p.returncode == 0, (size, p.stderr)
        assert (tmp_path / "out.txt").read_bytes() == b"".join(b"%d\n" % i for i in range(300))
