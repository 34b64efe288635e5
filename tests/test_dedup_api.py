"""cuckoo.dedup(): the CLI's dedup as a function over paths, binary file objects and iterables of
lines, returning the CLI's counts; exact, store and filter paths, the dropped= sink."""

from __future__ import annotations

import io

import pytest

import cuckoo
from cuckoo._dedup.engine import KeyTooLongError


def ref_dedup(data: bytes) -> bytes:
    """First occurrence of each key (line without '\\n' and one '\\r'), lines written as read; the
    input's missing final newline stays missing."""
    lines = data.split(b"\n")
    last_open = lines[-1] != b""
    if not last_open:
        lines.pop()
    seen = set()
    out = []
    for i, line in enumerate(lines):
        key = line[:-1] if line.endswith(b"\r") else line
        if key in seen:
            continue
        seen.add(key)
        out.append(line + (b"" if last_open and i == len(lines) - 1 else b"\n"))
    return b"".join(out)


DATA = b"a\nb\r\n\nb\na\n\n\x00\nc\x00\nc"


@pytest.mark.parametrize("exact", [False, True])
def test_paths_files_and_iterables_give_the_reference(tmp_path, exact):
    src = tmp_path / "in.txt"
    src.write_bytes(DATA)
    want = ref_dedup(DATA)
    n_lines = DATA.count(b"\n") + 1
    r = cuckoo.dedup(src, tmp_path / "out.txt", exact=exact, fpr=None)
    assert (tmp_path / "out.txt").read_bytes() == want
    assert (r.lines_read, r.lines_kept, r.lines_dropped) == (n_lines, want.count(b"\n") + 1, n_lines - r.lines_kept)
    assert r.bytes_read == len(DATA) and r.exact == exact
    with open(src, "rb") as fh:
        out = io.BytesIO()
        cuckoo.dedup(fh, out, exact=exact)
        assert not fh.closed
    assert out.getvalue() == want
    out = io.BytesIO()
    cuckoo.dedup(io.BytesIO(DATA).readlines(), out, exact=exact)
    assert out.getvalue() == want
    # items without their newline: each is a line; the last one gets none
    out = io.BytesIO()
    r = cuckoo.dedup(iter([b"x", b"y", b"x", b"z"]), out, exact=exact)
    assert out.getvalue() == b"x\ny\nz" and r.lines_read == 4 and r.lines_kept == 3
    # several paths are one input: a last line without '\n' gets one when more input follows
    (tmp_path / "b.txt").write_bytes(b"q\na")
    out = io.BytesIO()
    cuckoo.dedup([str(src), tmp_path / "b.txt"], out, exact=exact)
    assert out.getvalue() == ref_dedup(DATA + b"\nq\na")


@pytest.mark.parametrize("exact", [False, True])
def test_dropped_gets_the_other_lines_in_order(exact):
    out, dropped = io.BytesIO(), io.BytesIO()
    r = cuckoo.dedup(io.BytesIO(DATA), out, exact=exact, dropped=dropped, block_size=3)
    assert out.getvalue() == ref_dedup(DATA)
    lines = DATA.split(b"\n")
    seen, want = set(), []
    for i, line in enumerate(lines):
        key = line[:-1] if line.endswith(b"\r") else line
        if key in seen:
            want.append(line + (b"\n" if i < len(lines) - 1 else b""))
        seen.add(key)
    assert dropped.getvalue() == b"".join(want)
    assert r.lines_dropped == len(want)


def test_the_filter_path_reports_and_keeps_its_filter():
    seen = cuckoo.Filter(1000, fpr=1e-6)
    seen.add(b"b")
    out = io.BytesIO()
    r = cuckoo.dedup([b"a\n", b"b\n", b"a\n"], out, filter=seen)
    assert out.getvalue() == b"a\n" and r.filter is seen and b"a" in seen
    assert r.expected_false_drops > 0 and not r.exact
    r = cuckoo.dedup([b"a\n", b"c\n"], None, filter=seen)  # out=None: counts only
    assert (r.lines_read, r.lines_kept) == (2, 1)


@pytest.mark.parametrize("fpr", [None, 1e-2, 1e-4, 1e-5, 1e-8])
@pytest.mark.parametrize("capacity", [None, 5000])
def test_the_filter_dedup_makes_has_one_load_buckets_within_its_fpr(tmp_path, fpr, capacity):
    # The vector insert kernel takes buckets that one 8-byte load holds (b*f a multiple of 8 up
    # to 64, or b*f + 7 <= 64); 4 x 17 bits (the default 1e-4 at 4 slots) took the scalar
    # multi-word path at twice the cost a key: dedup picks 2-slot buckets there, at the same bound.
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"%d\n" % (i % 700) for i in range(2000)))
    r = cuckoo.dedup(str(src), None, fpr=fpr, capacity=capacity, seed=1)
    f = r.filter
    want = 1e-4 if fpr is None else fpr

    def one_load(b):
        bits = b * cuckoo.theory.fingerprint_bits(want, b)
        return (bits % 8 == 0 and bits <= 64) or bits + 7 <= 64

    assert f.bucket_size == (4 if one_load(4) or not one_load(2) else 2)
    assert f.bucket_size == {None: 2, 1e-2: 4, 1e-4: 2, 1e-5: 2, 1e-8: 4}[fpr]
    assert cuckoo.theory.fpr_bound(f.fingerprint_bits, f.bucket_size) <= want  # a stage of it
    assert f.fingerprint_bits == cuckoo.theory.fingerprint_bits(want, f.bucket_size)
    assert r.lines_read == 2000 and 600 < r.lines_kept <= 700


def test_a_full_fixed_filter_raises_with_the_work_done():
    out = io.BytesIO()
    lines = [b"%d\n" % i for i in range(5000)]
    with pytest.raises(cuckoo.FilterFullError) as info:
        cuckoo.dedup(lines, out, capacity=100, seed=1)
    r = info.value.dedup_result
    assert 100 <= r.lines_read < 5000
    assert out.getvalue() == b"".join(lines[: r.lines_read])


def test_store_path_across_runs(tmp_path):
    store = tmp_path / "s.ckv"
    out = io.BytesIO()
    r = cuckoo.dedup([b"a\n", b"b\n", b"a\n"], out, store=store)
    assert out.getvalue() == b"a\nb\n" and r.store_stats["live_keys"] == 2
    out = io.BytesIO()
    cuckoo.dedup([b"b\n", b"c\n"], out, store=str(store))
    assert out.getvalue() == b"c\n"
    with cuckoo.Store(store) as s:  # a Store object: used, left open
        out = io.BytesIO()
        cuckoo.dedup([b"c\n", b"d\n"], out, store=s)
        assert out.getvalue() == b"d\n" and len(s) == 4


def test_a_key_longer_than_a_store_key_stops_after_the_lines_before(monkeypatch):
    monkeypatch.setenv("CUCKOO_TEST_MAX_KEY", "10")
    out = io.BytesIO()
    with pytest.raises(KeyTooLongError) as info:
        cuckoo.dedup(io.BytesIO(b"a\nb\n" + b"x" * 11 + b"\nc\n"), out, exact=True)
    assert info.value.line == 3 and isinstance(info.value, ValueError)
    assert out.getvalue() == b"a\nb\n"


@pytest.mark.parametrize("kwargs, error", [
    (dict(exact=True, capacity=10), ValueError),
    (dict(exact=True, filter=cuckoo.Filter(10)), ValueError),
    (dict(threads=0), ValueError),
    (dict(block_size=0), ValueError),
    (dict(exact=False, memory=1 << 20), ValueError),  # memory= is for the exact path
    (dict(fpr=1e-4, memory=1 << 20), ValueError),  # (fpr= asks for the filter)
    (dict(exact=1), TypeError),
    (dict(store="s.ckv", exact=False), ValueError),
    (dict(exact=True, memory=4095), ValueError),
    (dict(exact=True, memory=True), ValueError),
    (dict(exact=True, memory=2.5e6), ValueError),
    (dict(store="s.ckv", memory=1 << 20), ValueError),
])
def test_bad_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        cuckoo.dedup([b"a\n"], None, **kwargs)


@pytest.mark.parametrize("source, error", [(b"a\nb\n", TypeError), (42, TypeError), ([b"a\nb\n"], ValueError),
                                           (["a\n"], None), ([u"a", 1], TypeError)])
def test_bad_sources_are_refused(source, error):
    if error is None:  # a list of str is a list of paths: a missing file
        with pytest.raises(FileNotFoundError) as info:
            cuckoo.dedup(source, None)
        assert info.value.filename == source[0]
        return
    with pytest.raises(error):
        cuckoo.dedup(source, None)


@pytest.mark.parametrize("store", [False, True])
def test_the_store_index_is_sized_from_the_estimate(tmp_path, store):
    """The exact paths size their index for the estimated distinct lines (the filter's estimate):
    no growth on the way (without it, the first block grows the new store's index once, and the
    in-memory key set's index (exact=True on a file) grows from 64 keys up, 10 times)."""
    data = b"".join(b"line-%d\n" % (i % 60_000) for i in range(150_000))
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    kwargs = dict(store=tmp_path / "s.ckv") if store else dict(exact=True)
    r = cuckoo.dedup(src, None, **kwargs)
    assert r.lines_kept == 60_000
    stats = r.store_stats if store else r.exact_stats
    assert stats["grows"] == 0


def test_an_unknown_input_size_grows_the_exact_index_from_memory(tmp_path):
    """A pipe longer than the estimate's look-ahead: nothing to size from, so the key set's index
    grows as lines come; under a small --memory the keys move to an anonymous store, whose index
    grows on from the entries' kept hash bits, never by reading the log back."""
    import os
    import threading

    data = b"".join(b"key-%d\n" % (i % 150_000) for i in range(300_000))

    def feed():
        with os.fdopen(w_fd, "wb") as w:
            w.write(data)

    for memory, moved in ((None, False), (256 << 10, True)):
        r_fd, w_fd = os.pipe()
        t = threading.Thread(target=feed)
        t.start()
        out = tmp_path / "out"
        with os.fdopen(r_fd, "rb") as src:
            r = cuckoo.dedup(src, out, exact=True, block_size=1 << 16, memory=memory)
        t.join()
        assert out.read_bytes() == ref_dedup(data)
        ex = r.exact_stats
        assert ex["read_once"] and ex["passes"] == 1
        if moved:
            assert 0 < ex["spilled_at_line"] < 100_000, ex
            assert ex["store_grows"] >= 1 and ex["store_grows_from_memory"] == ex["store_grows"], ex
        else:
            assert "spilled_at_line" not in ex and ex["grows"] > 3, ex


def test_the_default_exact_memory_follows_the_files_size(tmp_path, monkeypatch):
    """Without memory=, regular files get a quarter of their size (at least 128 MiB, at most the
    read-once default), input read once 1/16 of the machine's memory (256 MiB to 4 GiB); the
    budget a run used is in exact_stats["memory"], and a smaller one under the floor still
    means passes, never another output."""
    import os
    import threading

    from cuckoo._dedup import engine

    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    read_once = max(256 << 20, min(4 << 30, pages // 16))
    assert engine.exact_memory() == read_once
    assert engine.exact_memory(0) == min(read_once, 128 << 20)
    assert engine.exact_memory(1 << 20) == min(read_once, 128 << 20)
    assert engine.exact_memory(800 << 20) == min(read_once, 200 << 20)
    assert engine.exact_memory(1 << 50) == read_once
    # Short distinct lines: a key set larger than the file gets a third of it (~3 passes).
    assert engine.exact_memory(300 << 20, 900 << 20) == min(read_once, 300 << 20)
    assert engine.exact_memory(800 << 20, 300 << 20) == min(read_once, 200 << 20)
    assert engine.exact_memory(None, 1 << 40) == read_once
    # On a machine of 2 GiB (a read-once default of 256 MiB) and of 256 GiB (4 GiB).
    for ram, cap in ((2 << 30, 256 << 20), (256 << 30, 4 << 30)):
        monkeypatch.setattr(os, "sysconf", lambda name, ram=ram: ram >> 12 if name == "SC_PHYS_PAGES" else 4096)
        assert engine.exact_memory() == cap
        assert engine.exact_memory(600 << 20) == min(cap, 150 << 20)
        assert engine.exact_memory(64 << 30) == cap
    monkeypatch.undo()

    data = b"".join(b"line %d\n" % (i % 3000) for i in range(9000))
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    r = cuckoo.dedup(str(src), tmp_path / "a", exact=True)
    assert r.exact_stats["memory"] == engine.exact_memory(len(data)) and r.exact_stats["passes"] == 1
    r = cuckoo.dedup([str(src), str(src)], tmp_path / "b", exact=True)
    assert r.exact_stats["memory"] == engine.exact_memory(2 * len(data))
    r_fd, w_fd = os.pipe()
    t = threading.Thread(target=lambda: (os.write(w_fd, data), os.close(w_fd)))
    t.start()
    with os.fdopen(r_fd, "rb") as pipe:
        r = cuckoo.dedup(pipe, tmp_path / "c", exact=True)
    t.join()
    assert r.exact_stats["memory"] == engine.exact_memory() and r.exact_stats["read_once"]
    for name in "abc":
        assert (tmp_path / name).read_bytes() == ref_dedup(data)


def test_exact_memory_from_the_command_line(tmp_path):
    """--memory takes K, M and G suffixes (powers of 1024) and at least 4K; it is for --exact."""
    import subprocess
    import sys

    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"k%d\n" % (i % 2000) for i in range(6000)))
    want = b"".join(b"k%d\n" % i for i in range(2000))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cuckoo", "dedup", *args, str(src)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)

    small, big = run("--exact", "--memory", "8K"), run("--exact", "--memory", "1g")
    assert small.returncode == big.returncode == 0
    assert small.stdout == big.stdout == want
    passes = [int(p.stderr.split(b" pass")[0].rsplit(b" ", 1)[1]) for p in (small, big)]
    assert passes[0] > 1 and passes[1] == 1, (small.stderr, big.stderr)
    assert b"of --memory 8.0 KiB," in small.stderr and b"of --memory 1.0 GiB," in big.stderr
    default = run("--exact")
    assert default.returncode == 0 and default.stdout == want
    assert b"of 128.0 MiB (the default --memory), 1 pass" in default.stderr, default.stderr
    for args in (["--exact", "--memory", "1000"], ["--exact", "--memory", "lots"], ["--approx", "--memory", "1M"]):
        p = run(*args)
        assert p.returncode == 1 and p.stdout == b"", p.stderr
        assert b"memory" in p.stderr.strip().splitlines()[-1]  # (argparse's usage lines come first)


def test_import_and_a_file_dedup_leave_numpy_unimported(tmp_path):
    """`import cuckoo` and `cuckoo dedup FILE` (the native pipeline, filter and exact) run without
    NumPy: importing it was half of the command's start-up (cuckoo._numpy). Code that needs it
    still gets it on first use. Nor do they import the standard modules only other paths need
    (html, secrets, tempfile, dataclasses, json, csv, gzip: together about half of the rest)."""
    import subprocess
    import sys

    src = tmp_path / "in.txt"
    src.write_bytes(b"b\na\nb\r\nc\n" * 50)
    script = (
        "import sys\n"
        "lazy = {'html', 'secrets', 'tempfile', 'dataclasses', 'json', 'csv', 'gzip'} - set(sys.modules)\n"
        "import cuckoo, cuckoo.cli\n"
        "assert 'numpy' not in sys.modules, 'import cuckoo imported numpy'\n"
        "assert not lazy & set(sys.modules), f'import cuckoo imported {sorted(lazy & set(sys.modules))}'\n"
        "for extra in ([], ['--exact']):\n"
        "    try:\n"
        f"        cuckoo.cli.main(['dedup', *extra, {str(src)!r}, '-o', {str(tmp_path / 'out.txt')!r}])\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "    assert 'numpy' not in sys.modules, f'dedup {extra} imported numpy'\n"
        "    assert not lazy & set(sys.modules), f'dedup {extra} imported {sorted(lazy & set(sys.modules))}'\n"
        "f = cuckoo.Filter(1000)\n"
        "f.add_many(cuckoo._numpy.np.arange(10))\n"
        "assert 'numpy' in sys.modules and 9 in f\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "out.txt").read_bytes() == b"b\na\nc\n"



@pytest.mark.parametrize("kwargs, error, message", [
    (dict(source=io.StringIO("a\nb\n")), TypeError, "source is a text stream"),
    (dict(out=io.StringIO()), TypeError, "out is a text stream"),
    (dict(dropped=io.StringIO()), TypeError, "dropped is a text stream"),
    (dict(filter=cuckoo.Store()), TypeError, "a Store is store="),
    (dict(block_size=1.5), ValueError, "block_size must be an int"),
    (dict(threads=10**6), ValueError, "threads must be an int from 1 to"),
    (dict(missing="bogus"), ValueError, "missing"),
    (dict(exact=True, fpr=1e-4), ValueError, "for the filter"),
])
def test_wrong_arguments_get_a_clear_error(tmp_path, kwargs, error, message):
    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nb\na\n")
    source = kwargs.pop("source", src)
    out = kwargs.pop("out", tmp_path / "out.txt")
    with pytest.raises(error, match=message):
        cuckoo.dedup(source, out, **kwargs)
    assert not (tmp_path / "out.txt").exists()


def test_an_input_rewritten_between_passes_is_an_input_error_and_the_output_keeps_its_content(tmp_path):
    """exact=True reads a file once per pass over a hash range: a file rewritten during the run
    (same length, other lines) stops it with InputChangedError naming the file, and an existing
    output keeps its old content (issue 47: it was reported as a failure of a temporary store)."""
    from cuckoo._dedup import InputChangedError

    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [b"%010x\n" % (i * 0x9E3779B97F4A7C15 % (1 << 40)) for i in range(1_000_000)]
    data = b"".join(lines)
    src.write_bytes(data)
    out.write_bytes(b"yesterday's output\n")
    rewritten = []

    def progress(lines_read: int, bytes_read: int) -> None:  # (the calling thread, every 50 ms)
        if not rewritten:
            rewritten.append(lines_read)
            with open(src, "r+b") as fh:  # same length, the lines in another order
                fh.write(b"".join(reversed(lines)))

    with pytest.raises(InputChangedError, match=r"^input '.*in\.txt' changed while it was read again \(") as info:
        cuckoo.dedup(str(src), str(out), exact=True, memory=1 << 20, block_size=1 << 16, progress=progress)
    assert rewritten, "the run never reported progress: it was over before the file could change"
    assert info.value.paths == [str(src)]
    assert out.read_bytes() == b"yesterday's output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]  # no temporary file left


def test_an_input_that_changed_is_exit_1_on_the_command_line(tmp_path, monkeypatch, capsys):
    from cuckoo.cli import main

    def changed(*args, **kwargs):
        raise ValueError("the input changed while it was read again (fewer or other lines)")

    monkeypatch.setattr(cuckoo._core, "_dedup_exact", changed)
    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nb\na\n")
    assert main(["dedup", "--exact", str(src), "-o", str(tmp_path / "out.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cuckoo dedup: input '{src}' changed while it was read again (fewer or other lines)")
    assert "store" not in err.split(":")[1] and not (tmp_path / "out.txt").exists()
