"""cuckoo._dedup.columnar: Parquet and Arrow IPC dedup by a column, row group by row group, against
pyarrow + pandas drop_duplicates."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

from cuckoo._dedup import columnar as co  # noqa: E402


def table(n: int, seed: int, nulls: bool = False) -> "pa.Table":
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n // 4, size=n)
    key = pa.array([f"ev-{i}" if not (nulls and i % 97 == 0) else None for i in ids.tolist()], pa.string())
    return pa.table({
        "event_id": key,
        "n": pa.array(ids, pa.int64()),
        "payload": pa.array([{"a": int(i), "b": [float(i)] * (i % 3)} for i in ids.tolist()]),
        "when": pa.array(rng.integers(0, 10**12, size=n), pa.timestamp("ms")),
    })


def expected(t: "pa.Table", key: str) -> "pd.DataFrame":
    df = t.to_pandas()
    return df.drop_duplicates(subset=key, keep="first").reset_index(drop=True)


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("key", ["event_id", "n"])
def test_parquet_round_trip_equals_pandas(tmp_path, monkeypatch, exact, key):
    t = table(5000, 1)
    src, dst, drp = tmp_path / "in.parquet", tmp_path / "out.parquet", tmp_path / "dropped.parquet"
    pq.write_table(t, src, row_group_size=700)  # 8 row groups
    monkeypatch.setattr(co, "READ_BATCH_ROWS", 300)  # read batches that cut the row groups anywhere
    r = co.dedup_columnar(src, dst, key, exact=exact, dropped=drp, **({} if exact else {"fpr": 1e-7}))
    got = pq.read_table(dst)
    assert got.schema == t.schema  # the same schema, nested and timestamp columns included
    pd.testing.assert_frame_equal(got.to_pandas(), expected(t, key))
    assert r.rows_read == 5000 and r.batches == 17 and r.rows_kept == got.num_rows
    # Streamed, the output cut about as the input was: each row group but the last holds the
    # input's 700 rows or a read batch's worth more; the last holds the rest.
    for out in (dst, drp):
        meta = pq.ParquetFile(out).metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert all(700 <= n < 700 + 300 for n in sizes[:-1]) and 0 < sizes[-1] < 700 + 300, sizes
    # kept + dropped == the input, as a multiset of rows
    both = pd.concat([got.to_pandas(), pq.read_table(drp).to_pandas()])
    a = both.astype(str).sort_values(list(both.columns)).reset_index(drop=True)
    b = t.to_pandas().astype(str).sort_values(list(both.columns)).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_arrow_ipc_round_trip(tmp_path, fmt):
    t = table(3000, 2)
    src = tmp_path / "in.arrow"
    with pa.OSFile(str(src), "wb") as sink:
        w = (pa.ipc.new_file if fmt == "file" else pa.ipc.new_stream)(sink, t.schema)
        for b in t.to_batches(max_chunksize=500):
            w.write_batch(b)
        w.close()
    dst = tmp_path / "out.bin"  # no suffix: the input's format
    co.dedup_columnar(src, dst, "event_id", exact=True)
    with pa.memory_map(str(dst)) as m:
        got = (pa.ipc.open_file(m) if fmt == "file" else pa.ipc.open_stream(m)).read_all()
    assert got.schema == t.schema
    pd.testing.assert_frame_equal(got.to_pandas(), expected(t, "event_id"))


def test_output_format_from_suffix(tmp_path):
    t = table(500, 3)
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    co.dedup_columnar(src, tmp_path / "out.arrow", "event_id", exact=True)
    with pa.memory_map(str(tmp_path / "out.arrow")) as m:
        got = pa.ipc.open_file(m).read_all()
    pd.testing.assert_frame_equal(got.to_pandas(), expected(t, "event_id"))


def test_null_keys_follow_missing(tmp_path):
    t = table(2000, 4, nulls=True)
    src = tmp_path / "in.parquet"
    pq.write_table(t, src, row_group_size=300)
    df = t.to_pandas()
    isnull = df["event_id"].isna()
    first = ~df["event_id"].duplicated(keep="first") & ~isnull
    co.dedup_columnar(src, tmp_path / "k.parquet", "event_id", exact=True, missing="keep")
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "k.parquet").to_pandas(),
                                  df[first | isnull].reset_index(drop=True))
    co.dedup_columnar(src, tmp_path / "d.parquet", "event_id", exact=True, missing="drop")
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "d.parquet").to_pandas(), df[first].reset_index(drop=True))
    row = int(np.flatnonzero(isnull.to_numpy())[0]) + 1
    with pytest.raises(ValueError, match=f"row {row:,}: column 'event_id' is null"):
        co.dedup_columnar(src, tmp_path / "e.parquet", "event_id", exact=True)
    before = pq.read_table(tmp_path / "e.parquet").to_pandas()  # the rows before it are written
    pd.testing.assert_frame_equal(before, df[:row - 1][first[:row - 1]].reset_index(drop=True))


def test_errors(tmp_path):
    src = tmp_path / "in.parquet"
    pq.write_table(table(100, 5), src)
    with pytest.raises(KeyError, match="no column 'nope'"):
        co.dedup_columnar(src, tmp_path / "o.parquet", "nope")
    with pytest.raises(TypeError, match="column 'when' has type timestamp"):
        co.dedup_columnar(src, tmp_path / "o.parquet", "when")
    with pytest.raises(ValueError, match="refusing to overwrite the input"):
        co.dedup_columnar(src, src, "n")
    (tmp_path / "t.txt").write_bytes(b"a\nb\n")
    with pytest.raises(ValueError, match="not a Parquet or Arrow IPC file"):
        co.dedup_columnar(tmp_path / "t.txt", tmp_path / "o.parquet", "n")
    assert co.sniff_columnar(b"PAR1xxxx") == "parquet" and co.sniff_columnar(b"ARROW1\0\0") == "ipc"


# ---- corrupt Arrow IPC input (issue 47): a clear error naming the file, never a crash -----------

_CORRUPT_RUNNER = r"""
import json, os, random, sys
from cuckoo._dedup import columnar as co

src, work, fmt, seed, flips = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
data = open(src, "rb").read()
rng = random.Random(seed)
variants = [("cut", n) for n in sorted({rng.randrange(len(data)) for _ in range(40)} | {0, 6, 8, len(data) - 1})]
variants += [("flip", rng.randrange(len(data) * 8)) for _ in range(flips)]
counts = {"ok": 0, "error": 0}
for kind, at in variants:
    bad = bytearray(data[:at] if kind == "cut" else data)
    if kind == "flip":
        bad[at // 8] ^= 1 << (at % 8)
    path = os.path.join(work, f"bad.{fmt}")
    with open(path, "wb") as f:
        f.write(bad)
    print(kind, at, flush=True, file=sys.stderr)  # the variant a crash happened on
    try:
        co.dedup_columnar(path, os.path.join(work, "out.arrow"), "k", exact=True)
        counts["ok"] += 1
    except ValueError as exc:
        msg = str(exc)
        if path not in msg and at >= 8:  # (a file cut before its magic is "not a Parquet or Arrow IPC file")
            raise AssertionError(f"{kind} {at}: the error does not name the file: {msg}")
        counts["error"] += 1
print(json.dumps(counts))
"""


def _ipc_file(tmp_path, fmt):
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 300, size=2000)
    t = pa.table({"k": pa.array([f"key-{i}" for i in ids.tolist()]), "n": pa.array(ids, pa.int64()),
                  "b": pa.array([bytes(int(i) % 7) for i in ids.tolist()], pa.binary())})
    path = tmp_path / f"in.{fmt}"
    with (pa.ipc.new_file if fmt == "arrow" else pa.ipc.new_stream)(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=250):
            w.write(b)
    return path


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_corrupt_ipc_never_crashes(tmp_path, fmt):
    """Truncations and random bit flips of a real IPC file (file and stream format) give a
    ValueError naming the file, or (a flip in a value) a result; the interpreter never dies
    (an out-of-range buffer offset used to give SIGBUS, some flips SIGSEGV)."""
    import json
    import subprocess
    import sys

    src = _ipc_file(tmp_path, fmt)
    work = tmp_path / "w"
    work.mkdir()
    r = subprocess.run([sys.executable, "-c", _CORRUPT_RUNNER, str(src), str(work), fmt, "47", "150"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"died on variant {r.stderr.strip().splitlines()[-1:]}: rc {r.returncode}\n{r.stderr[-2000:]}"
    counts = json.loads(r.stdout)
    assert counts["error"] >= 40  # every truncation at least, and many flips


def test_corrupt_ipc_cli_exit_code(tmp_path):
    """The CLI reports a corrupt Arrow file on one line (no traceback) with the exit code of bad
    input (cuckoo.cli.common.EXIT_USAGE)."""
    from cuckoo.cli.common import EXIT_USAGE

    import subprocess
    import sys

    src = _ipc_file(tmp_path, "arrow")
    data = src.read_bytes()
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(data[: len(data) // 2])
    r = subprocess.run([sys.executable, "-m", "cuckoo", "dedup", str(bad), "-k", "k", "-o", str(tmp_path / "o.arrow")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == EXIT_USAGE != 0, r.stderr
    assert "Traceback" not in r.stderr
    assert str(bad) in r.stderr and "Arrow IPC" in r.stderr


def test_read_ahead_yields_in_order_raises_where_the_error_was_and_leaves_no_thread():
    import threading

    def items(fail_at):
        for i in range(6):
            if i == fail_at:
                raise OSError(f"read {i} failed")
            yield i

    def reading_threads():
        return [t for t in threading.enumerate() if t.name.startswith("cuckoo-read-ahead")]

    assert list(co._read_ahead(items(None))) == list(range(6))
    got = []
    with pytest.raises(OSError, match="read 3 failed"):
        for x in co._read_ahead(items(3)):
            got.append(x)
    assert got == [0, 1, 2]  # every item before the failed read, then its error
    ahead = co._read_ahead(items(None))
    assert next(ahead) == 0
    ahead.close()  # closed early (the caller's error): the read in flight is waited for
    assert reading_threads() == []



@pytest.mark.parametrize("type_", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_integer_keys_of_every_width_with_nulls_and_offsets(tmp_path, type_):
    """Integer keys are read from the column's values buffer (not to_numpy): each width and
    signedness, nulls anywhere, and arrays that start at an offset into their buffers (an IPC
    batch of a sliced table), against pandas."""
    rng = np.random.default_rng(5)
    n = 3000
    info = np.iinfo(np.dtype(type_))
    pool = rng.integers(max(info.min, -100), min(int(info.max), 100), size=40, endpoint=True).astype(type_)
    values = rng.choice(pool, size=n)
    null_at = rng.random(n) < 0.05
    col = pa.array(values, getattr(pa, type_)(), mask=null_at)
    t = pa.table({"k": col, "row": pa.array(np.arange(n), pa.int64())}).slice(37, n - 80)
    src, dst, drp = tmp_path / "in.arrow", tmp_path / "out.arrow", tmp_path / "dropped.arrow"
    with pa.ipc.new_file(src, t.schema) as w:
        for b in t.to_batches(max_chunksize=500):
            w.write(b)  # batches that are slices of one buffer: offsets other than 0
    r = co.dedup_columnar(src, dst, "k", exact=True, dropped=drp, missing="keep")
    df = t.to_pandas()
    want = df[df["k"].isna() | ~df["k"].duplicated(keep="first")]  # missing="keep": every null row
    got = pa.ipc.open_file(dst).read_all().to_pandas()
    assert got["row"].tolist() == want["row"].tolist()
    assert r.rows_read == len(t) and r.rows_kept == len(want)


def test_a_parquet_dedup_does_not_import_pandas(tmp_path):
    """pyarrow's pa.array and Array.to_numpy import pandas on first use (a quarter of a second, a
    sixth of a Parquet dedup of 3*10^6 rows): the column path builds its arrays without them."""
    import subprocess
    import sys

    t = table(2000, 3, nulls=True)
    src = tmp_path / "in.parquet"
    pq.write_table(t, src, row_group_size=500)
    code = ("import sys, cuckoo\n"
            f"cuckoo.dedup({str(src)!r}, {str(tmp_path / 'out.parquet')!r}, key='event_id', missing='keep', "
            f"dropped={str(tmp_path / 'd.parquet')!r})\n"
            f"cuckoo.dedup({str(src)!r}, {str(tmp_path / 'out2.parquet')!r}, key='n', exact=False)\n"
            "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("user_value", [None, "25"])
def test_a_cli_run_keeps_freed_arrow_memory_unless_the_user_says(tmp_path, user_value):
    """The command line asks pyarrow's mimalloc to keep freed memory (MIMALLOC_PURGE_DELAY=-1,
    cuckoo.cli.parser.keep_freed_arrow_memory): set before pyarrow is loaded (mimalloc reads it
    at load), and a value the user set is left as it is."""
    import os
    import subprocess
    import sys

    src = tmp_path / "in.parquet"
    pq.write_table(table(2000, 3), src, row_group_size=500)
    code = ("import os, sys\n"
            "import cuckoo.cli\n"
            "loaded_before = 'pyarrow' in sys.modules\n"
            f"sys.argv = ['cuckoo', 'dedup', '--exact', '-k', 'event_id', {str(src)!r}, '-o', "
            f"{str(tmp_path / 'out.parquet')!r}]\n"
            "code = cuckoo.cli.main()\n"
            "print(code, loaded_before, 'pyarrow' in sys.modules, os.environ.get('MIMALLOC_PURGE_DELAY'))\n")
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    if user_value is not None:
        env["MIMALLOC_PURGE_DELAY"] = user_value
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["0", "False", "True", user_value or "-1"]
    assert pq.read_table(tmp_path / "out.parquet").num_rows == len(set(table(2000, 3)["event_id"].to_pylist()))


def test_a_failed_write_is_raised_and_leaves_no_thread(tmp_path, monkeypatch):
    """The rows are written on a thread (_WriteBehind): a write that fails (a full disk) raises
    its error from the dedup, after the row groups before it were written whole and in order,
    and no writing thread is left behind."""
    import threading

    t = table(12000, 6)  # about 2,900 rows kept: 5 row groups of 500 or more
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(t, src, row_group_size=500)
    monkeypatch.setattr(co, "READ_BATCH_ROWS", 200)
    writes = []
    real = co._Writer.write

    def failing(self, piece):
        if self.path == str(dst):
            writes.append(piece.num_rows)
            if len(writes) == 2:
                raise OSError(28, "No space left on device")
        real(self, piece)

    monkeypatch.setattr(co._Writer, "write", failing)
    with pytest.raises(OSError, match="No space left"):
        co.dedup_columnar(src, dst, "event_id", exact=True)
    assert [th for th in threading.enumerate() if th.name.startswith("cuckoo-write-behind")] == []
    got = pq.read_table(dst).to_pandas()  # (the writer is closed: a valid file of the first group)
    assert len(got) == writes[0] >= 500
    assert len(writes) == 2  # nothing written after the failed piece: the output has no gap
    pd.testing.assert_frame_equal(got, expected(t, "event_id")[:writes[0]])


def test_integer_keys_from_a_values_buffer_with_padding():
    """A valid int64 array whose values buffer ends in bytes that are not a whole value (an IPC
    file may hold one): its keys are the values in use, not a NumPy error (found by
    fuzz/fuzz_arrow_ipc.py)."""
    buf = pa.py_buffer(np.arange(3, dtype=np.int64).tobytes() + b"xyz")
    col = pa.Array.from_buffers(pa.int64(), 3, [None, buf])
    col.validate(full=True)
    assert co._keys_of(col, "k").tolist() == [0, 1, 2]
    assert co._keys_of(col.slice(1, 2), "k").tolist() == [1, 2]
