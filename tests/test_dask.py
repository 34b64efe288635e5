"""cuckoo.dask against a real dask.distributed LocalCluster (2 worker processes)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import cuckoo  # noqa: E402
import cuckoo.dask as cd  # noqa: E402

N = 200_000
NPART = 8


@pytest.fixture(scope="module")
def client():
    # Worker processes (not threads): every filter really crosses a process boundary by pickle.
    # The active memory manager off: its ReduceReplicas policy drops, every 2 s, the replicas of a
    # key no task waits for yet, such as a filter broadcast for a graph not yet computed, which
    # test_contains_ships_the_filter_once counts.
    with dask.config.set({"distributed.worker.daemon": False,
                          "distributed.scheduler.active-memory-manager.start": False}):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40,
            # No dashboard, but the scheduler's HTTP server (/health, /metrics) still binds a port:
            # a free one, not the default 8787, which another suite or cluster on the machine may
            # hold (the "port in use" warning is an error here).
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        )
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _keys(n: int, unique_fraction: float, seed: int) -> np.ndarray:
    """n int64 keys, unique_fraction of them distinct; a repeated key appears twice, at random places
    (a key stored many times fills its two buckets: a multiset filter holds at most 2b copies)."""
    rng = np.random.default_rng(seed)
    distinct = rng.integers(-(2**63), 2**63 - 1, size=max(1, int(n * unique_fraction)), dtype=np.int64)
    keys = np.concatenate([distinct, distinct[: n - len(distinct)]])
    rng.shuffle(keys)
    return keys


def _frame(keys: np.ndarray, npartitions: int = NPART):
    pdf = pd.DataFrame({"k": keys, "s": pd.Series(keys.astype(str), dtype="string[pyarrow]"), "pos": np.arange(len(keys))})
    return pdf, dd.from_pandas(pdf, npartitions=npartitions, sort=False)


def _local(keys, capacity=None, multiset=False, **kw) -> cuckoo.Filter:
    """What cd.build must equal: set semantics (each distinct key once) unless multiset."""
    f = cuckoo.Filter(capacity or len(keys), **kw)
    if multiset:
        f.add_many(keys)
    else:
        f.add_unique_many(keys)
    return f


def test_pickle_is_to_bytes():
    f = _local(_keys(50_000, 1.0, 1))
    assert abs(len(pickle.dumps(f)) - len(f.to_bytes())) <= 100
    assert pickle.loads(pickle.dumps(f)) == f


def test_build_int_column_equals_local(client):
    keys = _keys(N, 1.0, 2)
    pdf, ddf = _frame(keys)
    f = cd.build(ddf, "k", fpr=0.01, seed=7)
    ref = _local(keys, fpr=0.01, seed=7)
    assert f == ref
    assert len(f) == len(ref) > 0.99 * N and f.capacity == N and f.seed == 7
    # Not equal to a filter missing one key, nor to a different seed: the comparison has teeth.
    assert f != _local(keys[:-1], capacity=N, fpr=0.01, seed=7)
    assert f != _local(keys, fpr=0.01, seed=8)


def test_build_string_column_and_series(client):
    keys = _keys(N // 4, 1.0, 3)
    pdf, ddf = _frame(keys, 5)
    ref = _local(pdf["s"])
    assert cd.build(ddf, "s") == ref
    assert cd.build(ddf["s"]) == ref
    assert cd.build(ddf[["s"]]) == ref  # a one-column frame needs no column=


def test_build_array_and_options(client):
    keys = _keys(N // 2, 1.0, 4)
    arr = da.from_array(keys, chunks=len(keys) // 7 + 1)
    assert cd.build(arr, fingerprint_bits=20, bucket_size=8) == _local(keys, fingerprint_bits=20, bucket_size=8)
    # A given capacity is used as is (and skips the length pass); split_every changes the tree only.
    assert cd.build(arr, capacity=3 * len(keys), split_every=2) == _local(keys, capacity=3 * len(keys))


def test_build_with_duplicates_multiset_counts_every_row(client):
    keys = _keys(N // 4, 0.5, 5)
    _, ddf = _frame(keys)
    # Repeated keys share their two buckets, so a filter of them fills up earlier (about 81% load
    # for keys stored twice with b = 4): give room.
    f = cd.build(ddf, "k", capacity=2 * len(keys), multiset=True)
    assert f == _local(keys, capacity=2 * len(keys), multiset=True)
    assert len(f) == len(keys)
    assert (f.count_many(keys) >= 2).all()  # every key twice (more only on fingerprint collisions)
    # The default is set semantics: each distinct key once.
    g = cd.build(ddf, "k", capacity=2 * len(keys))
    assert g == _local(keys, capacity=2 * len(keys)) and g != f
    assert len(g) <= len(np.unique(keys)) and g.contains_many(keys).all()


def test_build_multiset_of_ids_repeated_3_times(client):
    # Issue 27: "merging would overflow stage 0". Three copies of every key fill a filter sized for
    # the rows at ~72% load, so the build continues in a growable filter: every row is a copy.
    distinct = np.random.default_rng(27).integers(0, 2**63, size=N // 8, dtype=np.int64)
    keys = np.repeat(distinct, 3)
    np.random.default_rng(28).shuffle(keys)
    _, ddf = _frame(keys, 6)
    f = cd.build(ddf, "k", multiset=True, fpr=0.001)
    assert len(f) == len(keys) and f.growable
    counts = f.count_many(distinct)
    assert (counts >= 3).all() and np.count_nonzero(counts > 3) <= 0.01 * len(distinct)
    ref = cuckoo.Filter(len(keys), fpr=0.001, growable=True)
    ref.add_many(keys)  # a fixed filter of this capacity cannot hold them either
    assert len(ref) == len(f)


def test_build_of_keys_repeated_20_to_1000_times(client):
    # Issue 19: the README's own example failed ("merging would overflow stage 0") as soon as one
    # id occurred more than 2b times. Every key here repeats 20-1,000 times, spread over partitions.
    rng = np.random.default_rng(19)
    distinct = rng.integers(0, 2**63, size=400, dtype=np.int64)
    keys = np.repeat(distinct, rng.integers(20, 1001, size=len(distinct)))
    rng.shuffle(keys)
    pdf, ddf = _frame(keys, 6)
    for column in ("k", "s"):
        f = cd.build(ddf, column, fpr=0.001)
        assert f == _local(pdf[column], fpr=0.001), column
        assert f.contains_many(pdf[column]).all(), "no false negative"
        assert len(f) <= len(distinct) and (f.count_many(pdf[column]) <= 2).all()
    # A secret seed is drawn once on the client, so the partition filters still merge exactly.
    g = cd.build(ddf, "k", seed="random")
    assert g.seed != 0 and g == _local(keys, seed=g.seed) and g.contains_many(keys).all()
    # multiset=True keeps counts, so these repeats cannot fit: a clear error, not a wrong filter.
    with pytest.raises(cuckoo.FilterFullError, match="add_unique"):
        cd.build(ddf, "k", multiset=True)


def test_bad_input():
    keys = _keys(1000, 1.0, 6)
    pdf, ddf = _frame(keys, 2)
    with pytest.raises(ValueError, match="column"):
        cd.build(ddf)
    with pytest.raises(KeyError, match="nope"):
        cd.build(ddf, "nope")
    with pytest.raises(TypeError, match="float64"):
        cd.build(ddf.assign(x=ddf["k"] * 0.5), "x")
    with pytest.raises(TypeError, match="Dask DataFrame, Series or Array"):
        cd.build(keys)
    with pytest.raises(ValueError, match="1-d"):
        cd.build(da.zeros((4, 4), dtype=np.int64, chunks=2))
    with pytest.raises(ValueError, match="fpr"):
        cd.build(ddf, "k", fpr=2.0)
    with pytest.raises(ValueError, match="growable"):
        cd.build(ddf, "k", growable=True)
    with pytest.raises(TypeError, match="cuckoo.Filter"):
        cd.contains(ddf, {1, 2}, "k")


def test_contains_series_and_array(client):
    keys = _keys(N, 1.0, 7)
    pdf, ddf = _frame(keys)
    f = _local(keys[::2], capacity=N)
    mask = cd.contains(ddf, f, "k")
    assert isinstance(mask, dd.Series)
    got = mask.compute()
    expected = f.contains_many(keys)
    np.testing.assert_array_equal(got.to_numpy(), expected)
    assert got.index.equals(pdf.index)
    assert got.to_numpy()[::2].all()  # no false negatives
    assert got.to_numpy()[1::2].mean() < 0.01  # only false positives among the others
    # isin is the same function; a string column and a Dask Array work alike.
    fs = _local(pdf["s"][::3], capacity=N)
    np.testing.assert_array_equal(cd.isin(ddf, fs, "s").compute().to_numpy(), fs.contains_many(pdf["s"]))
    arr = da.from_array(keys, chunks=N // 5)
    amask = cd.contains(arr, f)
    assert isinstance(amask, da.Array)
    np.testing.assert_array_equal(amask.compute(), expected)
    # Usable for filtering rows lazily.
    assert len(ddf[cd.contains(ddf, f, "k")]) == int(expected.sum())


def test_contains_ships_the_filter_once(client):
    keys = _keys(N, 1.0, 8)
    _, ddf = _frame(keys, 16)
    f = _local(keys)
    mask = cd.contains(ddf, f, "k")
    # The filter's bytes appear in no task: the 16 partition tasks depend on one scattered key.
    graph = dict(mask.__dask_graph__())
    assert f.to_bytes()[:4096] not in pickle.dumps(graph)
    # Only this call's scattered filter: earlier tests' filters may still be on their way out.
    deps = {str(d) for task in graph.values() for d in getattr(task, "dependencies", ())}
    who_has = client.who_has()
    held = [k for k in who_has if str(k).startswith("Filter-") and str(k) in deps]
    assert held and all(len(who_has[k]) == 2 for k in held), who_has  # broadcast to both workers
    np.testing.assert_array_equal(mask.compute().to_numpy(), f.contains_many(keys))


def test_contains_without_distributed_client_is_one_graph_key():
    keys = _keys(20_000, 1.0, 9)
    arr = da.from_array(keys, chunks=2_000)
    f = _local(keys[:5000], capacity=len(keys))
    with dask.config.set(scheduler="threads"):
        mask = cd.contains(arr, f)
        graph = pickle.dumps(dict(mask.__dask_graph__()))
        # One copy of the filter in the whole graph (a single key the 10 block tasks depend on).
        assert graph.count(f.to_bytes()[:4096]) == 1
        got = mask.compute()
    np.testing.assert_array_equal(got, f.contains_many(keys))


def _first_occurrence(keys) -> np.ndarray:
    return ~pd.Series(keys).duplicated(keep="first").to_numpy()


@pytest.mark.parametrize("column", ["k", "s"])
def test_dedup_frame_keeps_first_occurrences(client, column):
    keys = _keys(N, 0.5, 10)
    pdf, ddf = _frame(keys)
    out = cd.dedup(ddf, column, fpr=0.001, seed=3)
    assert isinstance(out, dd.DataFrame)
    assert out.npartitions == ddf.npartitions
    got = out.compute()
    kept = np.zeros(N, bool)
    kept[got["pos"].to_numpy()] = True
    first = _first_occurrence(pdf[column])
    # Never keeps a repeat (no false negatives), in order, with the rows intact.
    assert not (kept & ~first).any()
    assert got["pos"].is_monotonic_increasing
    pd.testing.assert_frame_equal(got, pdf[kept], check_index_type=False)
    # Drops a first occurrence only on a fingerprint collision: exactly the local mask.
    ref = cuckoo.Filter(N, fpr=0.001, seed=3).add_unique_many(pdf[column])
    np.testing.assert_array_equal(kept, ref)
    missing = int((first & ~kept).sum())
    assert missing <= 3 * first.sum() * 0.001 + 10
    assert first.sum() > 0.45 * N  # the data really has about 50% repeats


def test_dedup_array_and_capacity(client):
    keys = _keys(N // 2, 0.5, 11)
    arr = da.from_array(keys, chunks=len(keys) // 6 + 1)
    out = cd.dedup(arr, capacity=len(keys), fpr=0.0001)
    assert isinstance(out, da.Array)
    got = out.compute()
    ref = cuckoo.Filter(len(keys), fpr=0.0001).add_unique_many(keys)
    np.testing.assert_array_equal(got, keys[ref])
    assert len(np.unique(got)) == len(got)


def test_dedup_is_lazy_and_recomputable(client):
    keys = _keys(20_000, 0.5, 12)
    pdf, ddf = _frame(keys, 4)
    out = cd.dedup(ddf, "k")
    a = out.compute()
    b = out.compute()  # tasks are pure: a second run gives the same rows
    pd.testing.assert_frame_equal(a, b)
    assert len(out) == len(a)
    # A Series works alike and keeps its index.
    s = cd.dedup(ddf["k"]).compute()
    pd.testing.assert_series_equal(s, a["k"])


def test_dask_sizeof_counts_the_table():
    # The scheduler weighs task inputs by dask.sizeof: a filter must count its table, else dedup's
    # chain moves the filter to every partition instead of the keys to the filter.
    from dask.sizeof import sizeof

    f = cuckoo.Filter(100_000)
    assert sizeof(f) >= f.nbytes > 100_000


def _repeated_keys(distinct: int, seed: int, most: int = 50) -> np.ndarray:
    """Keys repeated 1..most times each, shuffled."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(-(2**63), 2**63 - 1, size=distinct, dtype=np.int64)
    keys = np.repeat(ids, rng.integers(1, most + 1, size=distinct))
    rng.shuffle(keys)
    return keys


@pytest.mark.parametrize("column,npartitions,shards", [("k", 13, None), ("s", 7, 3), ("k", 5, 1), ("s", 9, 20)])
def test_exact_dedup_equals_pandas_drop_duplicates(client, column, npartitions, shards):
    keys = _repeated_keys(3_000, 20 + npartitions)
    pdf, ddf = _frame(keys, npartitions)
    out = cd.dedup(ddf, column, exact=True, shards=shards)
    assert isinstance(out, dd.DataFrame) and out.npartitions == ddf.npartitions
    outs = dask.compute(*out.to_delayed())
    got = pd.concat(outs)
    pd.testing.assert_frame_equal(got, pdf.drop_duplicates(subset=column, keep="first"))
    # The rows stay in their partitions: each output partition is its input partition's subset.
    for part, whole in zip(outs, dask.compute(*ddf.to_delayed())):
        assert set(part["pos"]) <= set(whole["pos"])


def test_exact_dedup_keeps_what_a_small_filter_drops(client):
    # 4-bit fingerprints: the filter path drops many first occurrences; the exact path none.
    keys = _repeated_keys(5_000, 31, most=3)
    pdf, ddf = _frame(keys, 6)
    expected = pdf.drop_duplicates(subset="k", keep="first")
    assert len(cd.dedup(ddf, "k", fingerprint_bits=4).compute()) < len(expected)
    pd.testing.assert_frame_equal(cd.dedup(ddf, "k", exact=True).compute(), expected)


def test_exact_dedup_series_array_empty_partitions_and_recompute(client):
    keys = _repeated_keys(500, 41)
    pdf, ddf = _frame(keys, 4)
    s = cd.dedup(ddf["s"], exact=True)
    a = s.compute()
    pd.testing.assert_series_equal(a, pdf["s"].drop_duplicates(keep="first"))
    pd.testing.assert_series_equal(s.compute(), a)  # pure tasks: the same answer again
    arr = da.from_array(keys, chunks=len(keys) // 5 + 1)
    np.testing.assert_array_equal(cd.dedup(arr, exact=True).compute(), pd.unique(keys))
    with_empty = dd.from_pandas(pdf, npartitions=4, sort=False)
    with_empty = with_empty[with_empty["pos"] % 4 != 0].repartition(npartitions=6)
    got = cd.dedup(with_empty, "k", exact=True).compute()
    sub = pdf[pdf["pos"] % 4 != 0]
    pd.testing.assert_frame_equal(got, sub.drop_duplicates(subset="k", keep="first"))


def test_exact_dedup_bad_arguments():
    _, ddf = _frame(np.arange(10), 2)
    with pytest.raises(ValueError, match="exact=True uses an exact key set"):
        cd.dedup(ddf, "k", fpr=0.01, exact=True)
    with pytest.raises(ValueError, match="shards must be an int >= 1"):
        cd.dedup(ddf, "k", exact=True, shards=0)
    with pytest.raises(ValueError, match="shards=... is for exact=True"):
        cd.dedup(ddf, "k", shards=2, exact=False)
    with pytest.raises(ValueError, match="shards=... is for exact=True"):
        cd.dedup(ddf, "k", fpr=0.01, shards=2)
    with pytest.raises(TypeError, match="exact must be a bool"):
        cd.dedup(ddf, "k", exact=1)


def _exact_equals_pandas(pdf, column, npartitions, shards=None):
    ddf = dd.from_pandas(pdf, npartitions=npartitions, sort=False)
    got = cd.dedup(ddf, column, exact=True, shards=shards).compute()
    # Of the computed frame (Dask may change dtypes: object columns of str become strings).
    pd.testing.assert_frame_equal(got, ddf.compute().drop_duplicates(subset=column, keep="first"))
    return got


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "Int64", "object"])
def test_exact_dedup_missing_keys_count_as_pandas_counts_them(client, dtype):
    # A Store refuses missing values (ValueError before this was handled); pandas keeps the first
    # NA row (NA equal to NA) and, in an object column, None apart from NaN.
    rng = np.random.default_rng(7)
    base = rng.integers(0, 40, size=600)
    values = pd.Series(base, dtype="Int64") if dtype == "Int64" else pd.Series(base.astype(str), dtype=dtype)
    values = values.astype(object) if dtype == "object" else values
    nulls = rng.choice(600, size=60, replace=False)
    for j, i in enumerate(nulls):
        values.iloc[i] = (None if j % 2 else np.nan) if dtype == "object" else pd.NA
    pdf = pd.DataFrame({"k": values, "pos": np.arange(600)})
    # Dask turns object columns of str into string[pyarrow] (None and NaN both NA) unless told not to.
    with dask.config.set({"dataframe.convert-string": dtype != "object"}):
        got = _exact_equals_pandas(pdf, "k", 7, shards=3)
    assert int(got["k"].isna().sum()) == (2 if dtype == "object" else 1)


def test_exact_dedup_one_partition_and_all_keys_in_one_shard(client):
    keys = _repeated_keys(400, 51, most=5)
    pdf, _ = _frame(keys, 1)
    _exact_equals_pandas(pdf, "k", 1)
    # Only keys whose hash sends them to shard 0 of 4: three shards get nothing at all.
    h = pd.util.hash_array(keys) % np.uint64(4)
    one = keys[h == 0]
    assert len(np.unique(one)) > 50
    pdf, _ = _frame(one, 5)
    _exact_equals_pandas(pdf, "k", 5, shards=4)
    _exact_equals_pandas(pdf.iloc[:0], "k", 3, shards=4)  # no rows at all


def test_exact_dedup_several_key_columns(client):
    rng = np.random.default_rng(61)
    n = 3_000
    pdf = pd.DataFrame({
        "a": rng.integers(0, 12, n),
        "b": pd.Series(rng.choice(["x", "y", "", "xy", "é"], n), dtype="string[pyarrow]"),
        "c": pd.Series(rng.integers(0, 3, n).astype(np.uint64)),
        "pos": np.arange(n),
    })
    # Fields whose bytes run together the same way must stay apart: ("x", "y") is not ("xy", "").
    pdf.loc[5, ["a", "b"]] = [1, "xy"]
    pdf.loc[6, ["a", "b"]] = [1, "x"]
    pdf["b2"] = pdf["b"].astype(object).where(pdf["pos"] % 97 != 0, None)  # some missing fields
    _exact_equals_pandas(pdf, ["a", "b"], 6)
    _exact_equals_pandas(pdf, ["b", "a", "c"], 4, shards=2)
    _exact_equals_pandas(pdf, ["a", "b2"], 5)
    _exact_equals_pandas(pdf, ("c",), 3)
    with pytest.raises(ValueError, match="need exact=True"):
        cd.dedup(dd.from_pandas(pdf, npartitions=2), ["a", "b"], exact=False)
    with pytest.raises(KeyError, match="'nope'"):
        cd.dedup(dd.from_pandas(pdf, npartitions=2), ["a", "nope"], exact=True)
    with pytest.raises(ValueError, match="names no key column"):
        cd.dedup(dd.from_pandas(pdf, npartitions=2), [], exact=True)


# ---- exact by default (issue 47) --------------------------------------------------------------

def _graph_names(collection) -> str:
    return " ".join(str(k) for k in dict(collection.dask))


def test_dedup_is_exact_by_default(client):
    """cuckoo.dask.dedup() drops no first occurrence unless the filter is asked for (exact=False,
    fpr=, capacity= or a filter argument), as cuckoo dedup and cuckoo.dedup()."""
    keys = _keys(N, 0.9, 81)
    pdf, ddf = _frame(keys)
    out = cd.dedup(ddf, "k")
    assert "cuckoo-dedup-shard" in _graph_names(out) and "cuckoo-dedup-step" not in _graph_names(out)
    pd.testing.assert_frame_equal(out.compute(), pdf.drop_duplicates(subset="k", keep="first"))
    for asked in ({"exact": False}, {"fpr": 0.01}, {"capacity": N}, {"fingerprint_bits": 8}):
        names = _graph_names(cd.dedup(ddf, "k", **asked))
        assert "cuckoo-dedup-step" in names and "cuckoo-dedup-shard" not in names, asked
    # With the filter asked for, a small one really drops first occurrences: the default did not.
    assert len(cd.dedup(ddf, "k", fingerprint_bits=4).compute()) < len(out.compute())
    with pytest.raises(ValueError, match="exact=True uses an exact key set"):
        cd.dedup(ddf, "k", exact=True, seed=5)


def test_exact_dedup_keeps_apart_what_pandas_keeps_apart(client):
    """b"a" and "a", -1 and 2**64-1 are different keys to pandas: the exact path used to merge
    them (the key set hashes str as its UTF-8 bytes and ints by their 64-bit value); a lone
    surrogate in a str key raised UnicodeEncodeError."""
    keys = [b"a", "a", -1, 2**64 - 1, "\ud800", "a", b"a", 2**64 - 1, -1, "\ud800", "x", b"\xed\xa0\x80",
            "\ud800x", 0, "0", b"0", 1, True] * 7
    pdf = pd.DataFrame({"k": pd.Series(keys, dtype=object), "pos": np.arange(len(keys))})
    with dask.config.set({"dataframe.convert-string": False}):
        for npart, shards in ((1, None), (5, 3), (9, 4)):
            ddf = dd.from_pandas(pdf, npartitions=npart, sort=False)
            got = cd.dedup(ddf, "k", shards=shards).compute()
            pd.testing.assert_frame_equal(got, pdf.drop_duplicates(subset="k", keep="first"))
            # and as one field of several key columns
            pdf2 = pdf.assign(j=pdf["pos"] % 2)
            got = cd.dedup(dd.from_pandas(pdf2, npartitions=npart, sort=False), ["k", "j"], shards=shards).compute()
            pd.testing.assert_frame_equal(got, pdf2.drop_duplicates(subset=["k", "j"], keep="first"))


@pytest.mark.parametrize("column,npartitions,shards", [("k", 13, None), ("s", 7, 3), (["k", "s"], 5, 2)])
def test_exact_dedup_keep_last_equals_pandas_and_cuckoo_dedup(client, column, npartitions, shards, tmp_path):
    """keep="last": pandas' drop_duplicates(keep="last") of the computed frame, the rows staying in
    their partitions; and the records `cuckoo.dedup(..., keep="last")` writes from the same CSV."""
    keys = _repeated_keys(2_000, 50 + npartitions)
    pdf, ddf = _frame(keys, npartitions)
    out = cd.dedup(ddf, column, shards=shards, keep="last")
    got = out.compute()
    pd.testing.assert_frame_equal(got, pdf.drop_duplicates(subset=column, keep="last"))
    if column == "k":
        src = tmp_path / "in.csv"
        pdf.to_csv(src, index=False)
        dst = tmp_path / "out.csv"
        cuckoo.dedup(str(src), str(dst), csv=True, key="k", keep="last")
        assert pd.read_csv(dst)["pos"].tolist() == got["pos"].tolist()


def test_exact_dedup_keep_last_with_missing_keys_and_arrays(client):
    pdf = pd.DataFrame({"k": pd.Series([1, None, "a", float("nan"), 1, None, b"a", "a"] * 5, dtype=object),
                        "pos": np.arange(40)})
    with dask.config.set({"dataframe.convert-string": False}):
        for npart, shards in ((1, None), (4, 3)):
            got = cd.dedup(dd.from_pandas(pdf, npartitions=npart, sort=False), "k", shards=shards,
                           keep="last").compute()
            pd.testing.assert_frame_equal(got, pdf.drop_duplicates(subset="k", keep="last"))
    keys = _repeated_keys(300, 7)
    arr = da.from_array(keys, chunks=len(keys) // 4 + 1)
    want = pd.Series(keys).drop_duplicates(keep="last").to_numpy()
    np.testing.assert_array_equal(cd.dedup(arr, exact=True, keep="last").compute(), want)
    with pytest.raises(ValueError, match="keep='last' needs exact=True"):
        cd.dedup(arr, exact=False, keep="last")
    with pytest.raises(ValueError, match="keep must be"):
        cd.dedup(arr, keep="middle")
