"""The CLI's exact paths: `cuckoo dedup --exact` / `--store` against the exact reference of
test_cli.py (no line ever dropped), and `cuckoo store` import/export (byte-identical), get, put,
del, info, compact, with their exit codes."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_cli import ref_dedup, run

LINES = st.lists(st.sampled_from([b"a", b"b", b"", b"a\r", b"\x00x", b"long" * 300, b"\xff\xfe", b"c"]),
                 max_size=60)


@settings(max_examples=25, deadline=None)
@given(LINES, LINES, st.booleans())
def test_dedup_exact_equals_the_reference(tmp_path_factory, a, b, unterminated):
    d = tmp_path_factory.mktemp("exact")
    first = b"\n".join(a) + (b"" if unterminated or not a else b"\n")
    second = b"\n".join(b) + (b"\n" if b else b"")
    (d / "a.txt").write_bytes(first)
    (d / "b.txt").write_bytes(second)
    # tiny blocks: keys are verified across blocks, through the log, not only in memory
    out = run("dedup", "--exact", "--block-size", "16", d / "a.txt", d / "b.txt", check=0)
    assert out.stdout == ref_dedup(first, second)


def test_dedup_exact_on_many_near_duplicates(tmp_path):
    rng = random.Random(5)
    data = b"".join(b"%08d\n" % rng.randrange(20_000) for _ in range(100_000))
    (tmp_path / "in.txt").write_bytes(data)
    out = run("dedup", "--exact", "--block-size", "65536", tmp_path / "in.txt", check=0)
    assert out.stdout == ref_dedup(data)
    assert b"no line wrongly dropped" in out.stderr
    piped = run("dedup", "--exact", input=data, check=0)
    assert piped.stdout == out.stdout


def test_dedup_against_a_persistent_store(tmp_path):
    store = tmp_path / "seen.store"
    run("dedup", "--store", store, input=b"a\nb\n", check=0)
    out = run("dedup", "--store", store, input=b"b\nc\na\nd\nc\n", check=0)
    assert out.stdout == b"c\nd\n"
    info = json.loads(run("store", "info", store, "--json", check=0).stdout)
    assert info["live_keys"] == 4
    bad = run("dedup", "--exact", "--fpr", "0.01", input=b"a\n")
    assert bad.returncode == 1 and b"--fpr is for the filter" in bad.stderr


def test_store_import_export_round_trip_byte_identical(tmp_path):
    rng = random.Random(1)
    lines = [b"line %d %s" % (i, b"x" * rng.randrange(50)) for i in range(5000)]
    lines += lines[:100]  # repeated lines are records of their own: nothing is deduplicated
    data = b"\r\n".join(lines[:10]) + b"\n" + b"\n".join(lines[10:]) + b"\n\n\nno newline at the end"
    (tmp_path / "in.txt").write_bytes(data)
    store = tmp_path / "lines.store"
    run("store", "import", store, tmp_path / "in.txt", "--block-size", "4096", check=0)
    run("store", "export", store, "-o", tmp_path / "out.txt", check=0)
    assert (tmp_path / "out.txt").read_bytes() == data
    assert run("store", "get", store, "--int", "1", check=0).stdout == lines[1] + b"\r\n"
    # a second import appends after the existing line keys
    run("store", "import", store, input=b"more\n", check=0)
    assert run("store", "export", store, check=0).stdout == data + b"more\n"


def test_store_get_put_del_info_compact(tmp_path):
    store = tmp_path / "kv.store"
    (tmp_path / "kv.tsv").write_bytes(b"alice\tadmin\nbob\tdev\n")
    run("store", "import", store, "--tsv", tmp_path / "kv.tsv", check=0)
    assert run("store", "get", store, "alice", "bob", check=0).stdout == b"admin\ndev\n"
    run("store", "put", store, "alice", "root", check=0)
    run("store", "del", store, "bob", check=0)
    missing = run("store", "get", store, "alice", "bob")
    assert missing.returncode == 1 and missing.stdout == b"root\n" and b"bob: not found" in missing.stderr
    assert run("store", "del", store, "bob").returncode == 1
    assert run("store", "export", store, "--tsv", check=0).stdout == b"alice\troot\n"
    info = json.loads(run("store", "info", store, "--json", check=0).stdout)
    assert info["live_keys"] == 1 and info["dead_bytes"] > 0
    run("store", "compact", store, check=0)
    info = json.loads(run("store", "info", store, "--json", check=0).stdout)
    assert info["dead_bytes"] == 0 and info["snapshot_used"]
    assert b"1 keys" in run("store", "info", store, check=0).stdout
    bad = run("store", "import", store, "--tsv", input=b"no tab here\n")
    assert bad.returncode == 1 and b"no TAB" in bad.stderr


def test_store_errors_are_one_line(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a store" * 20)
    out = run("store", "info", junk)
    assert out.returncode == 2 and b"not a cuckoo store" in out.stderr and b"Traceback" not in out.stderr
    out = run("store", "get", tmp_path / "missing.store", "k")
    assert out.returncode == 2 and b"Traceback" not in out.stderr


def test_second_writer_is_refused_on_one_line(tmp_path):
    import cuckoo
    store = tmp_path / "s.store"
    with cuckoo.Store(store):
        out = run("store", "put", store, "k", "v")
        assert out.returncode == 2 and b"one writer at a time" in out.stderr
        assert b"Traceback" not in out.stderr
