"""Keyed dedup of records: `cuckoo dedup --csv -k id`, `-t '\\t' -k 1`, `--jsonl -k id` and
`--jsonl -k user.id` (exact, 1 and N threads; the filter with --approx), and a Parquet file by a
column, against DuckDB (`row_number()` over the key, first by input order) and Polars
(`unique(keep="first", maintain_order=True)`) in the same run, with our whole-line exact dedup
of the same file beside them (issue 46's inputs and targets).

    pip install duckdb polars pyarrow    # the peers (left out, with a note, when missing)
    python benchmarks/dedup_records.py   # 3*10^6 events, 3 interleaved rounds
    python benchmarks/dedup_records.py --records 300000 --rounds 1 --inputs csv,jsonl

Inputs (built in a temporary directory, removed at the end): `--records` events whose id is
drawn from 0.6 x `--records` values (3*10^6 events: about 1.46*10^6 distinct ids); each has a
user (an id and a name that sometimes holds a comma, quoted in CSV), a URL and a note that is
sometimes quoted with an embedded newline or a doubled quote (CSV) or escapes (JSON):
  csv     RFC 4180, header `id,user_id,user_name,url,note`, key `id`
  csv.gz  the same, gzipped (decompressed on a thread of its own)
  tsv     the same fields without quoting or line breaks, tab-separated, key field 1
  jsonl   one object a line, key `id` (top level)
  jsonl-nested  the same file, key `user.id` (a nested path; about 0.5 x records distinct)
  parquet the CSV's rows in a Parquet file (row groups of 2^20), key column `id`

Every tool runs in a fresh process; rounds interleave the tools; min and median wall time and
the largest peak RSS are printed (/usr/bin/time -v, else getrusage). Every output is checked by
its sequence of keys against the reference (the first occurrence of each key in input order);
the filter's must be a subsequence of it. Then the ratio lines with the targets: keyed exact
<= 0.5x the wall time of DuckDB and of Polars and <= 1.5x our whole-line exact dedup of the same
file, peak RSS <= 0.3x DuckDB's; the filter faster than exact; 1 -> N threads >= 1.6x on CSV;
Parquet at most DuckDB's time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dedup import cuckoo_command, have, run_measured  # noqa: E402

NAMES = ["ana", "bo", "Smith, J", "李", "o'neil", "Müller, K", "x"]


def events(n: int, seed: int) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, int(n * 0.6), size=n)
    # The user follows the id (a repeated event has the same user), so that the nested key's
    # repeats are the id's repeats merged two by two.
    return {"id": ids, "user": ids // 2, "name": (ids * 7 + 3) % len(NAMES), "note": rng.integers(0, 40, size=n)}


def note_text(k: int) -> str:
    if k == 0:
        return 'said "hi"\nthen left'
    if k == 1:
        return "two\nlines"
    if k == 2:
        return 'a "quoted" word'
    return f"note {k}"


def csv_field(s: str) -> str:
    return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n\r') else s


def write_inputs(tmp: str, n: int, seed: int, which: Sequence[str]) -> Dict[str, str]:
    ev = events(n, seed)
    paths: Dict[str, str] = {}
    ids, users, names, notes = (ev[k].tolist() for k in ("id", "user", "name", "note"))
    url = "https://example.com/e/{:x}/{}"
    if any(w in which for w in ("csv", "csv.gz", "parquet")):
        p = os.path.join(tmp, "events.csv")
        with open(p, "w", encoding="utf-8", newline="") as fh:
            fh.write("id,user_id,user_name,url,note\n")
            fh.writelines(f"{i},{u},{csv_field(NAMES[m])},{url.format(i * 2654435761 % (1 << 40), i % 97)},"
                          f"{csv_field(note_text(t))}\n" for i, u, m, t in zip(ids, users, names, notes))
        paths["csv"] = p
        if "csv.gz" in which:
            with open(p, "rb") as src, gzip.open(p + ".gz", "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
            paths["csv.gz"] = p + ".gz"
        if "parquet" in which and have("pyarrow"):
            import pyarrow.csv as pc
            import pyarrow.parquet as pq

            table = pc.read_csv(p, parse_options=pc.ParseOptions(newlines_in_values=True),
                                convert_options=pc.ConvertOptions(column_types={"id": "int64"}))
            pq.write_table(table, os.path.join(tmp, "events.parquet"), row_group_size=1 << 20)
            paths["parquet"] = os.path.join(tmp, "events.parquet")
    if "tsv" in which:
        p = os.path.join(tmp, "events.tsv")
        with open(p, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(f"{i}\t{u}\t{NAMES[m]}\t{url.format(i * 2654435761 % (1 << 40), i % 97)}\t"
                          f"{note_text(t).replace(chr(10), ' ')}\n" for i, u, m, t in zip(ids, users, names, notes))
        paths["tsv"] = p
    if "jsonl" in which or "jsonl-nested" in which:
        p = os.path.join(tmp, "events.jsonl")
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
        with open(p, "w", encoding="utf-8") as fh:
            fh.writelines(dumps({"id": i, "user": {"id": u, "name": NAMES[m]},
                                 "url": url.format(i * 2654435761 % (1 << 40), i % 97), "note": note_text(t)}) + "\n"
                          for i, u, m, t in zip(ids, users, names, notes))
        paths["jsonl"] = paths["jsonl-nested"] = p
    return paths


def reference(keys: Sequence[int]) -> List[int]:
    seen = set()
    out = []
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def output_keys(path: str, kind: str, column: str) -> List[int]:
    """The key of each record of an output file, in order (read with Polars, else Python)."""
    if kind == "parquet":
        import pyarrow.parquet as pq

        return [int(x) for x in pq.read_table(path, columns=[column]).column(column).to_pylist()]
    if kind in ("jsonl", "jsonl-nested"):
        with open(path, "rb") as fh:
            objs = (json.loads(line) for line in fh if line.strip())
            return [int(o["user"]["id"] if kind == "jsonl-nested" else o["id"]) for o in objs]
    if kind == "tsv":
        with open(path, "rb") as fh:
            return [int(line.split(b"\t", 1)[0]) for line in fh]
    opener = gzip.open if path.endswith(".gz") else open
    if have("polars"):
        import polars as pl

        with opener(path, "rb") as fh:
            return pl.read_csv(fh.read(), columns=[column], schema_overrides={column: pl.Int64})[column].to_list()
    import csv

    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        r = csv.reader(fh)
        idx = next(r).index(column)
        return [int(row[idx]) for row in r]


def is_subsequence(got: List[int], ref: List[int]) -> bool:
    it = iter(ref)
    return all(any(k == r for r in it) for k in got)


# Each peer in a fresh interpreter: argv = input, output, kind. Order-preserving first occurrence.
DUCKDB_SCRIPT = r"""
import sys, duckdb
src, out, kind = sys.argv[1:4]
con = duckdb.connect()
if kind in ("csv", "csv.gz"):
    read, key, fmt = f"read_csv('{src}', header=true)", "id", "(HEADER true)"
elif kind == "tsv":
    read, key, fmt = f"read_csv('{src}', header=false, delim='\t', quote='', escape='')", "column0", "(HEADER false, DELIMITER '\t', QUOTE '')"
elif kind == "parquet":
    read, key, fmt = f"read_parquet('{src}')", "id", "(FORMAT parquet)"
else:
    read, fmt = f"read_json('{src}', format='newline_delimited')", "(FORMAT json)"
    key = "id" if kind == "jsonl" else "user.id"
con.execute(f'''COPY (SELECT * EXCLUDE (ord_) FROM (SELECT *, row_number() OVER () AS ord_ FROM {read})
    QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY ord_) = 1 ORDER BY ord_) TO '{out}' {fmt}''')
"""
POLARS_SCRIPT = r"""
import sys, polars as pl
src, out, kind = sys.argv[1:4]
if kind in ("csv", "csv.gz"):
    df = pl.read_csv(src)
    df.unique(subset=["id"], keep="first", maintain_order=True).write_csv(out)
elif kind == "tsv":
    df = pl.read_csv(src, has_header=False, separator="\t", quote_char=None)
    df.unique(subset=[df.columns[0]], keep="first", maintain_order=True).write_csv(out, include_header=False, separator="\t", quote_style="never")
elif kind == "parquet":
    pl.read_parquet(src).unique(subset=["id"], keep="first", maintain_order=True).write_parquet(out)
else:
    df = pl.read_ndjson(src)
    if kind == "jsonl":
        df = df.unique(subset=["id"], keep="first", maintain_order=True)
    else:
        df = df.with_columns(pl.col("user").struct.field("id").alias("k_")).unique(
            subset=["k_"], keep="first", maintain_order=True).drop("k_")
    df.write_ndjson(out)
"""

KEY_OPTIONS = {"csv": ["--csv", "-k", "id"], "csv.gz": ["--csv", "-k", "id"], "tsv": ["-t", "\\t", "-k", "1"],
               "jsonl": ["--jsonl", "-k", "id"], "jsonl-nested": ["--jsonl", "-k", "user.id"],
               "parquet": ["-k", "id"]}
SUFFIX = {"csv": ".csv", "csv.gz": ".csv", "tsv": ".tsv", "jsonl": ".jsonl", "jsonl-nested": ".jsonl",
          "parquet": ".parquet"}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=3_000_000, help="events (default 3*10^6)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--inputs", default="csv,csv.gz,tsv,jsonl,jsonl-nested,parquet",
                    help="which inputs, comma-separated (default all)")
    ap.add_argument("--threads", type=int, default=None, help="threads of the N-thread runs (default: cores)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dir", default=None, help="where to put the temporary directory (default: system temp)")
    args = ap.parse_args(argv)

    from _machine import header

    threads = args.threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    print(header())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} rounds; "
          f"{args.records:,} events")
    missing = [m for m in ("duckdb", "polars", "pyarrow") if not have(m)]
    if missing:
        print(f"not installed (pip install {' '.join(missing)}): their columns are left out")
    which = args.inputs.split(",")
    env = dict(os.environ, LC_ALL="C")
    ok = True
    tmp = tempfile.mkdtemp(prefix="cuckoo-records-bench-", dir=args.dir)
    try:
        t0 = time.perf_counter()
        paths = write_inputs(tmp, args.records, args.seed, which)
        ev = events(args.records, args.seed)
        print(f"inputs built in {time.perf_counter() - t0:.0f} s")
        cuckoo = cuckoo_command()
        for kind in which:
            if kind not in paths:
                print(f"\n== {kind}: left out (pyarrow missing)")
                continue
            path = paths[kind]
            size = os.path.getsize(path)
            ref = reference((ev["user"] if kind == "jsonl-nested" else ev["id"]).tolist())
            print(f"\n== {kind}: {size / 2**20:.0f} MiB, {args.records:,} records, {len(ref):,} distinct keys")
            out = lambda name: os.path.join(tmp, name + SUFFIX[kind])  # noqa: E731
            keyed = KEY_OPTIONS[kind]
            tools: List[Tuple[str, List[str], str]] = []
            if kind == "parquet":
                tools.append(("cuckoo exact", cuckoo + ["dedup", *keyed, path, "-o", out("exact")], out("exact")))
                tools.append(("cuckoo --approx", cuckoo + ["dedup", "--approx", *keyed, path, "-o", out("approx")],
                              out("approx")))
            else:
                tools += [("exact, 1 thread", cuckoo + ["dedup", "--threads", "1", *keyed, path, "-o", out("x1")],
                           out("x1")),
                          (f"exact, {threads} threads", cuckoo + ["dedup", "--threads", str(threads), *keyed, path,
                                                                  "-o", out("xn")], out("xn")),
                          (f"--approx, {threads} threads", cuckoo + ["dedup", "--approx", "--threads", str(threads),
                                                                     *keyed, path, "-o", out("fn")], out("fn")),
                          ("whole lines, exact", cuckoo + ["dedup", "--threads", str(threads), path, "-o",
                                                          os.path.join(tmp, "lines.out")], "")]
            if have("duckdb"):
                tools.append(("DuckDB", [sys.executable, "-c", DUCKDB_SCRIPT, path, out("duckdb"), kind],
                              out("duckdb")))
            if have("polars"):
                tools.append(("Polars", [sys.executable, "-c", POLARS_SCRIPT, path, out("polars"), kind],
                              out("polars")))
            walls: Dict[str, List[float]] = {name: [] for name, _, _ in tools}
            rss: Dict[str, float] = {name: 0.0 for name, _, _ in tools}
            for _ in range(max(args.rounds, 1)):
                for name, cmd, _ in tools:
                    w, _, r, _ = run_measured(cmd, os.path.join(tmp, "stdout.log"), env)
                    walls[name].append(w)
                    rss[name] = max(rss[name], r)
            print(f"  {'tool':<24}{'min s':>8}{'median s':>10}{'peak RSS MiB':>14}{'MB/s':>8}  output by its keys")
            for name, _, o in tools:
                w = sorted(walls[name])
                check = ""
                if o:
                    got = output_keys(o, kind, "id")
                    if "approx" in name:
                        good = is_subsequence(got, ref)
                        check = f"subsequence of the reference: {good} ({len(ref) - len(got):,} dropped by mistake)"
                    else:
                        good = got == ref
                        check = f"equals the reference: {good}"
                    ok &= good or name in ("DuckDB", "Polars")
                print(f"  {name:<24}{w[0]:>8.2f}{w[len(w) // 2]:>10.2f}{rss[name]:>14.0f}{size / 1e6 / w[0]:>8.0f}"
                      f"  {check}")
            best = {name: min(w) for name, w in walls.items()}
            median = {name: sorted(w)[len(w) // 2] for name, w in walls.items()}
            ours = "cuckoo exact" if kind == "parquet" else f"exact, {threads} threads"
            for peer in ("DuckDB", "Polars"):
                if peer in best:
                    # Issue 46's targets: Parquet at most DuckDB's time (no memory target: its
                    # column path holds Arrow batches); records half the peers' time, and peak
                    # RSS at most 0.3x DuckDB's.
                    target = "<= 1" if kind == "parquet" else "<= 0.5"
                    print(f"  {ours} / {peer}: wall {best[ours] / best[peer]:.2f}x (target {target}), peak RSS "
                          f"{rss[ours] / rss[peer]:.2f}x" + (" (target <= 0.3)" if peer == "DuckDB" and kind != "parquet" else ""))
            if kind != "parquet":
                print(f"  {ours} / whole lines, exact: wall {best[ours] / best['whole lines, exact']:.2f}x "
                      f"(target <= 1.5)")
                approx = f"--approx, {threads} threads"
                print(f"  {approx} / {ours}: wall {best[approx] / best[ours]:.2f}x (target < 1)")
                one = "exact, 1 thread"
                print(f"  exact 1 -> {threads} threads: {best[one] / best[ours]:.2f}x by min, "
                      f"{median[one] / median[ours]:.2f}x by median" + (" (target >= 1.6)" if kind == "csv" else ""))
            else:
                print(f"  cuckoo --approx / cuckoo exact: wall {best['cuckoo --approx'] / best[ours]:.2f}x")
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
