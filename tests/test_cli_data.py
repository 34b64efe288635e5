"""`cuckoo dedup` over the data pipelines hold, against reference tools on the same data:
compressed inputs and outputs (zcat/bzcat/xzcat/zstd + awk), -t/-k fields (awk -F), --csv and
--jsonl (Python's csv and json modules), --missing, --dropped (+ output == input as a multiset),
Parquet (pyarrow + pandas), --expansion; and the same options of cuckoo.dedup()."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import random
import shutil
import subprocess
import sys
from collections import Counter

import pytest

import cuckoo

zstandard = pytest.importorskip("zstandard")


LOW_FPR = ["--fpr", "1e-8"]  # 30-bit fingerprints: no false drop in these small inputs


def run(*args, input=b"", check=None):
    proc = subprocess.run([sys.executable, "-m", "cuckoo", *map(str, args)], input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if check is not None:
        assert proc.returncode == check, proc.stderr.decode(errors="replace")
    return proc


COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".zst": lambda d: zstandard.ZstdCompressor(write_checksum=True).compress(d)}
TOOLS = {".gz": ["zcat"], ".bz2": ["bzcat"], ".xz": ["xzcat"], ".zst": ["zstd", "-dc"]}
def _zstd_frames(data: bytes) -> bytes:
    """Every frame of `data` (a --store run's output ends one at each commit)."""
    out = []
    while data:
        d = zstandard.ZstdDecompressor().decompressobj()
        out.append(d.decompress(data))
        if not d.eof:
            break
        data = d.unused_data
    return b"".join(out)


DECOMPRESS = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress, ".zst": _zstd_frames}


def lines(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(b"%d\tuser-%d\t%s\n" % (i, rng.randrange(n // 5), rng.choice([b"a", b"b\xc3\xa9"]))
                    for i in range(n))


def awk(program: str, data: bytes, *opts: str) -> bytes:
    if not shutil.which("awk"):
        pytest.skip("no awk")
    return subprocess.run(["awk", *opts, program], input=data, capture_output=True, check=True).stdout


def multiset(data: bytes) -> Counter:
    return Counter(data.splitlines(keepends=True))


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_compressed_input_by_magic_matches_zcat_awk(tmp_path, suffix):
    data = lines(20_000, 1)
    path = tmp_path / "events.log"  # the name says nothing: the magic bytes do
    path.write_bytes(COMPRESS[suffix](data))
    tool = TOOLS[suffix]
    if shutil.which(tool[0]):
        plain = subprocess.run([*tool, str(path)], capture_output=True, check=True).stdout
    else:
        plain = DECOMPRESS[suffix](path.read_bytes())
    ref = awk("!seen[$0]++", plain)
    for extra in (LOW_FPR, ["--exact"]):
        out = run("dedup", "-q", *extra, path, check=0).stdout
        assert out == ref


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_compressed_output_by_suffix(tmp_path, suffix):
    data = lines(5_000, 2)
    dst = tmp_path / f"out{suffix}"
    run("dedup", "-q", "--exact", "-o", dst, "-", input=data, check=0)
    assert DECOMPRESS[suffix](dst.read_bytes()) == awk("!seen[$0]++", data)


def test_corrupt_compressed_input_is_an_error(tmp_path):
    good = gzip.compress(lines(5_000, 3))
    (tmp_path / "bad.gz").write_bytes(good[: len(good) // 2])
    proc = run("dedup", "-q", tmp_path / "bad.gz")
    assert proc.returncode != 0
    assert b"not valid gzip data: corrupt or truncated" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_tab_field_key_matches_awk(tmp_path):
    data = lines(20_000, 4)
    ref = awk("!seen[$2]++", data, "-F\t")
    for extra in (LOW_FPR, ["--exact"]):
        assert run("dedup", "-q", *extra, "-t", "\\t", "-k", "2", "-", input=data, check=0).stdout == ref


def test_dropped_plus_output_is_the_input(tmp_path):
    keyed = lines(10_000, 5)
    whole = b"".join(line.split(b"\t", 1)[1] for line in keyed.splitlines(keepends=True))  # lines repeat
    for extra, data in ((["-t", "\t", "-k", "2"], keyed), ([], whole), (["--exact"], whole),
                        (["--exact", "-t", "\t", "-k", "2,3"], keyed)):
        drop = tmp_path / "dropped.txt"
        out = run("dedup", "-q", *extra, "--dropped", drop, "-", input=data, check=0).stdout
        assert multiset(out) + multiset(drop.read_bytes()) == multiset(data)
        assert len(out) < len(data)


def test_csv_key_matches_python_csv(tmp_path):
    rng = random.Random(6)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["event_id", "text"])
    for i in range(3000):
        w.writerow([rng.choice(["e1", "e,2", 'e"3"', "multi\nline", "ü", f"x{rng.randrange(300)}"]), f"row {i}"])
    data = buf.getvalue().encode()
    src = tmp_path / "in.csv.gz"
    src.write_bytes(gzip.compress(data))
    out = run("dedup", "-q", *LOW_FPR, "--csv", "-k", "event_id", src, check=0).stdout
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    seen, want = set(), [rows[0]]
    for r in rows[1:]:
        if r[0] not in seen:
            seen.add(r[0])
            want.append(r)
    assert list(csv.reader(io.StringIO(out.decode(), newline=""))) == want
    assert out == run("dedup", "-q", "--exact", "--csv", "-k", "1", src, check=0).stdout


def test_jsonl_key_and_missing_error_line(tmp_path):
    recs = [{"id": 1, "a": {"b": 1}}, {"id": 2, "a": {"b": "1"}}, {"id": 3, "a": {"b": 1}}, {"id": 4}]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    proc = run("dedup", "-q", "--jsonl", "-k", "a.b", "-", input=data)
    assert proc.returncode != 0
    assert proc.stdout == data.splitlines(keepends=True)[0] + data.splitlines(keepends=True)[1]
    assert proc.stderr.decode().strip().splitlines() == [proc.stderr.decode().strip()]
    assert "line 4" in proc.stderr.decode()
    out = run("dedup", "-q", "--jsonl", "-k", "a.b", "--missing", "keep", "-", input=data, check=0).stdout
    assert [json.loads(x)["id"] for x in out.splitlines()] == [1, 2, 4]
    out = run("dedup", "-q", "--jsonl", "-k", "a.b", "--missing", "drop", "-", input=data, check=0).stdout
    assert [json.loads(x)["id"] for x in out.splitlines()] == [1, 2]


def test_bad_record_options_are_usage_errors():
    for args in (["-k", "2"], ["--csv", "--jsonl", "-k", "a"], ["-t", "ab", "-k", "1"], ["-t", ",", "-k", "0"],
                 ["--missing", "keep"]):
        proc = run("dedup", "-q", *args, "-", input=b"a\n")
        assert proc.returncode == 1, args  # EXIT_USAGE
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_parquet_through_the_cli(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("pandas")
    rng = random.Random(7)
    t = pa.table({"k": [f"k{rng.randrange(400)}" for _ in range(4000)], "v": list(range(4000))})
    pq.write_table(t, tmp_path / "in.parquet", row_group_size=500)
    for extra in (LOW_FPR, ["--exact"]):
        run("dedup", "-q", *extra, "-k", "k", tmp_path / "in.parquet", "-o", tmp_path / "out.parquet",
            "--dropped", tmp_path / "drop.parquet", check=0)
        got = pq.read_table(tmp_path / "out.parquet")
        assert got.schema == t.schema
        want = t.to_pandas().drop_duplicates(subset="k", keep="first").reset_index(drop=True)
        assert got.to_pandas().equals(want)
        assert got.num_rows + pq.read_table(tmp_path / "drop.parquet").num_rows == 4000


def test_expansion_option(tmp_path):
    data = b"".join(b"%d\n" % i for i in range(30_000))
    run("build", "-q", "--capacity", "1000", "--expansion", "4", "-o", tmp_path / "f.cuckoo", "-", input=data)
    f = cuckoo.Filter.load(tmp_path / "f.cuckoo")
    assert f.growable and f.expansion == 4
    proc = run("dedup", "-q", "--expansion", "7", "-", input=b"a\n")
    assert proc.returncode == 1 and b"--expansion: must be 1, 2, 3 or 4" in proc.stderr


def test_python_entry_takes_the_same_options(tmp_path):
    data = lines(5_000, 8)
    src = tmp_path / "in.tsv.xz"
    src.write_bytes(lzma.compress(data))
    out, drop = tmp_path / "out.tsv.gz", tmp_path / "drop.tsv"
    r = cuckoo.dedup(src, out, exact=True, sep="\t", key="2", dropped=drop)
    kept = gzip.decompress(out.read_bytes())
    assert kept == awk("!seen[$2]++", data, "-F\t")
    assert multiset(kept) + multiset(drop.read_bytes()) == multiset(data)
    assert r.lines_read == 5_000 and r.lines_kept == len(kept.splitlines())
    with pytest.raises(ValueError, match="line 2"):
        cuckoo.dedup(io.BytesIO(b"a,1\nb\n"), io.BytesIO(), sep=",", key=2)


def test_a_named_pipe_input_loses_no_bytes(tmp_path):
    import os
    import threading

    data = lines(3_000, 9)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(gzip.compress(data))

    t = threading.Thread(target=feed)
    t.start()
    out = run("dedup", "-q", "--exact", fifo, check=0).stdout
    t.join()
    assert out == awk("!seen[$0]++", data)


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".xz"])
def test_store_with_compressed_output_writes_every_line_after_a_kill(tmp_path, suffix):
    """dedup --store -o OUT.gz killed at random moments, then rerun: the store records a block only
    after its compressed bytes were flushed to the file (a sync point), so what the killed runs'
    files decompress to (up to where they stop) plus the last run's output holds every distinct
    line; every keyed record too (-t/-k)."""
    import os
    import signal
    import time
    import zlib

    rng = random.Random(10)
    data = lines(60_000, 11)
    keys = {line.split(b"\t")[1] for line in data.splitlines()}
    src = tmp_path / "in.tsv"
    src.write_bytes(data)
    store = tmp_path / "seen.ckv"
    cmd = [sys.executable, "-m", "cuckoo", "dedup", "-q", "--store", str(store), "--block-size", "8192",
           "-t", "\t", "-k", "2", str(src)]

    def partial(raw: bytes) -> bytes:  # what a cut compressed stream decompresses to
        if suffix == ".gz":  # (member by member: a journaled run ends one at each commit)
            out = []
            while raw:
                d = zlib.decompressobj(31)
                out.append(d.decompress(raw))
                if not d.eof:
                    break
                raw = d.unused_data
            return b"".join(out)
        if suffix == ".xz":
            d = lzma.LZMADecompressor()
            out = []
            while raw:
                try:
                    out.append(d.decompress(raw))
                except lzma.LZMAError:
                    break
                if not d.eof:
                    break
                raw, d = d.unused_data, lzma.LZMADecompressor()
            return b"".join(out)
        return _zstd_frames(raw)

    written = []
    for trial in range(3):
        out = tmp_path / f"run{trial}{suffix}"
        before = os.path.getsize(store) if store.exists() else 0
        proc = subprocess.Popen([*cmd, "-o", str(out)], stderr=subprocess.DEVNULL)
        # Kill once the store has recorded a few more blocks (mid-run, not before or after it).
        grow = rng.randrange(1, 200_000)
        while proc.poll() is None and (os.path.getsize(store) if store.exists() else 0) < before + grow:
            time.sleep(0.0005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        raw = out.read_bytes() if out.exists() else b""
        written.append(partial(raw))
    out = tmp_path / f"final{suffix}"
    subprocess.run([*cmd, "-o", str(out)], check=True, timeout=120)
    written.append(DECOMPRESS[suffix](out.read_bytes()))
    got = set()
    for piece in written:
        got |= {line.split(b"\t")[1] for line in piece.split(b"\n")[:-1]}  # whole lines only
    assert got == keys
    assert os.path.getsize(store) > 0
