"""Counts, repeated/unique keys, keep-last and NUL-terminated records (`cuckoo dedup -c`, `-d`, `-u`,
`--keep last`, `-z`) against the tools a user would pick for the same job, in the same run:
`sort | uniq -c` (and `-d`, `-u`; they sort, so the input order is lost), pandas and DuckDB (each
in the input's first-occurrence order, as we write), with our `--exact` dedup of the same file
as the baseline (issue 49's targets: `--count` at most 2x `--exact`).

    pip install duckdb pandas            # the peers (left out, with a note, when missing)
    python benchmarks/dedup_counts.py    # 10^7 hex lines, 3 interleaved rounds (~5 minutes)
    python benchmarks/dedup_counts.py --lines 1000000 --rounds 1

Input: benchmarks/dedup.py's hex lines (16-24 hex bytes drawn uniformly from half as many ids as
lines: 10^7 lines hold about 4.3*10^6 distinct), and the same records ending at NUL for `-z`.
Every tool runs in a fresh process, rounds interleave them; min and median wall time and the
largest peak RSS are printed (/usr/bin/time -v). Outputs are checked: `-c` against `uniq -c`
(the same count for every line) and in the order of `--exact`'s output; `-d`/`-u` against
`uniq -d`/`-u` (the same set of lines); `--keep last` against pandas' `drop_duplicates(keep=
"last")` (the same lines in the same order); `-z` against `--exact` on the newline file;
`--window N` (N = a tenth of the lines; no peer does windowed dedup of a file) against a deque of
the last N lines, its peak RSS beside `--exact`'s over N distinct lines of the same form.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dedup import cuckoo_command, have, hex_input, run_measured  # noqa: E402

# pandas and DuckDB, in a fresh interpreter (argv: job, input, output). Each line is one column
# (a delimiter no input holds, quoting off); outputs in first-occurrence order, as ours.
PANDAS_SCRIPT = """
import sys, csv, pandas as pd
job, src, dst = sys.argv[1:4]
s = pd.read_csv(src, header=None, names=["line"], dtype=str, sep="\\x1f", quoting=csv.QUOTE_NONE,
                keep_default_na=False)["line"]
if job == "count":
    c = s.value_counts(sort=False)
    with open(dst, "w") as f:
        f.writelines(f"{n:7d} {line}\\n" for line, n in c.items())
else:
    s.drop_duplicates(keep="last").to_csv(dst, header=False, index=False, quoting=csv.QUOTE_NONE)
"""
DUCKDB_SCRIPT = """
import sys, duckdb
job, src, dst = sys.argv[1:4]
con = duckdb.connect()
rows = f\"\"\"(SELECT line, row_number() OVER () AS rn FROM read_csv('{src}', header=false,
    columns={{'line': 'VARCHAR'}}, delim='\\x1f', quote='', escape=''))\"\"\"
if job == "count":
    q = f"SELECT lpad(count(*)::VARCHAR, 7, ' ') || ' ' || line FROM {rows} GROUP BY line ORDER BY min(rn)"
else:
    q = f"SELECT line FROM {rows} QUALIFY row_number() OVER (PARTITION BY line ORDER BY rn DESC) = 1 ORDER BY rn"
con.execute(f"COPY ({q}) TO '{dst}' (HEADER false, QUOTE '')")
"""


def counts_of(path: str) -> Tuple[Dict[bytes, int], List[bytes]]:
    """The `uniq -c` lines of a file: line -> count, and the lines in the file's order."""
    counts: Dict[bytes, int] = {}
    order: List[bytes] = []
    with open(path, "rb") as f:
        for row in f:
            n, _, line = row.rstrip(b"\n").lstrip().partition(b" ")
            counts[line] = int(n)
            order.append(line)
    return counts, order


def lines_of(path: str) -> List[bytes]:
    with open(path, "rb") as f:
        return f.read().split(b"\n")[:-1] if os.path.getsize(path) else []


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000_000, help="hex lines (default 10^7)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=None, help="where to put the temporary directory (default: system temp)")
    args = ap.parse_args(argv)

    from _machine import header

    print(header())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} rounds; "
          f"{args.lines:,} hex lines")
    missing = [m for m in ("duckdb", "pandas") if not have(m)]
    if missing:
        print(f"not installed (pip install {' '.join(missing)}): their rows are left out")
    env = dict(os.environ, LC_ALL="C")
    tmp = tempfile.mkdtemp(prefix="cuckoo-counts-bench-", dir=args.dir)
    ok = True
    try:
        src = os.path.join(tmp, "hex.txt")
        hex_input(src, args.lines, args.lines // 2, args.seed)
        nul = os.path.join(tmp, "hex.nul")
        with open(src, "rb") as f, open(nul, "wb") as g:
            g.write(f.read().replace(b"\n", b"\0"))
        # The window's memory target: a count window of `window` records over the input against
        # --exact over `window` distinct lines of the same form.
        window = max(args.lines // 10, 1)
        distinct = os.path.join(tmp, "distinct.txt")
        hex_input(distinct, window, 1 << 60, args.seed + 1)
        size = os.path.getsize(src)
        out = lambda name: os.path.join(tmp, name + ".out")  # noqa: E731
        cuckoo = cuckoo_command() + ["dedup", "-q"]
        sh = lambda text: ["sh", "-c", text]  # noqa: E731
        # (job, tool, command, output)
        tools: List[Tuple[str, str, List[str], str]] = [
            ("dedup", "cuckoo --exact", cuckoo + ["--exact", src, "-o", out("exact")], out("exact")),
            ("count", "cuckoo -c", cuckoo + ["-c", src, "-o", out("count")], out("count")),
            ("count", "sort | uniq -c", sh(f"sort '{src}' | uniq -c > '{out('uniq-c')}'"), out("uniq-c")),
            ("repeated", "cuckoo -d", cuckoo + ["-d", src, "-o", out("d")], out("d")),
            ("repeated", "sort | uniq -d", sh(f"sort '{src}' | uniq -d > '{out('uniq-d')}'"), out("uniq-d")),
            ("unique", "cuckoo -u", cuckoo + ["-u", src, "-o", out("u")], out("u")),
            ("unique", "sort | uniq -u", sh(f"sort '{src}' | uniq -u > '{out('uniq-u')}'"), out("uniq-u")),
            ("keep last", "cuckoo --keep last", cuckoo + ["--keep", "last", src, "-o", out("last")], out("last")),
            ("-z", "cuckoo -z", cuckoo + ["-z", nul, "-o", out("z")], out("z")),
            ("-z", "sort -zu", sh(f"sort -zu '{nul}' > '{out('sort-zu')}'"), out("sort-zu")),
            ("window", f"cuckoo --window {window}", cuckoo + ["--window", str(window), src, "-o", out("w")], out("w")),
            ("window", f"--exact, {window} keys", cuckoo + ["--exact", distinct, "-o", out("wx")], out("wx")),
        ]
        if have("pandas"):
            tools.insert(3, ("count", "pandas value_counts", [sys.executable, "-c", PANDAS_SCRIPT, "count", src,
                                                              out("pd-count")], out("pd-count")))
            tools.append(("keep last", "pandas keep='last'", [sys.executable, "-c", PANDAS_SCRIPT, "last", src,
                                                             out("pd-last")], out("pd-last")))
        if have("duckdb"):
            tools.insert(3, ("count", "DuckDB GROUP BY", [sys.executable, "-c", DUCKDB_SCRIPT, "count", src,
                                                          out("db-count")], out("db-count")))
            tools.append(("keep last", "DuckDB QUALIFY", [sys.executable, "-c", DUCKDB_SCRIPT, "last", src,
                                                         out("db-last")], out("db-last")))
        walls: Dict[str, List[float]] = {name: [] for _, name, _, _ in tools}
        rss: Dict[str, float] = {name: 0.0 for _, name, _, _ in tools}
        for _ in range(max(args.rounds, 1)):
            for _, name, cmd, _ in tools:
                w, _, r, _ = run_measured(cmd, os.path.join(tmp, "stdout.log"), env)
                walls[name].append(w)
                rss[name] = max(rss[name], r)
        # The checks.
        exact = lines_of(out("exact"))
        checks: Dict[str, str] = {}
        uniq_counts, _ = counts_of(out("uniq-c"))
        ours, order = counts_of(out("count"))
        good = ours == uniq_counts and order == exact
        checks["cuckoo -c"] = f"= uniq -c's counts, --exact's order: {good}"
        ok &= good
        for flag, name in (("d", "cuckoo -d"), ("u", "cuckoo -u")):
            good = sorted(lines_of(out(flag))) == lines_of(out(f"uniq-{flag}"))
            want = [line for line in exact if (uniq_counts[line] > 1) == (flag == "d")]
            good &= lines_of(out(flag)) == want
            checks[name] = f"= uniq -{flag}'s lines, in input order: {good}"
            ok &= good
        if have("pandas"):
            good = lines_of(out("last")) == lines_of(out("pd-last"))
            checks["cuckoo --keep last"] = f"= pandas drop_duplicates(keep='last'): {good}"
            ok &= good
            checks["pandas value_counts"] = f"= ours: {counts_of(out('pd-count')) == (ours, order)}"
        if have("duckdb"):
            checks["DuckDB GROUP BY"] = f"= ours: {counts_of(out('db-count')) == (ours, order)}"
            checks["DuckDB QUALIFY"] = f"= ours: {lines_of(out('db-last')) == lines_of(out('last'))}"
        with open(out("z"), "rb") as f:
            good = f.read().split(b"\0")[:-1] == exact
        checks["cuckoo -z"] = f"= --exact on the newline file: {good}"
        ok &= good
        with open(src, "rb") as f:  # (the deque's keys counted, so that a lookup is O(1))
            last: collections.deque = collections.deque()
            held: collections.Counter = collections.Counter()
            want = []
            for line in f:
                if not held[line]:
                    want.append(line)
                last.append(line)
                held[line] += 1
                if len(last) > window:
                    old = last.popleft()
                    held[old] -= 1
        with open(out("w"), "rb") as f:
            good = f.read() == b"".join(want)
        checks[f"cuckoo --window {window}"] = f"= a deque of the last {window:,}: {good}"
        ok &= good
        del want, last
        print(f"\ninput: {size / 2**20:.0f} MiB, {len(exact):,} distinct lines")
        print(f"  {'job':<10}{'tool':<22}{'min s':>8}{'median s':>10}{'peak RSS MiB':>14}  output")
        for job, name, _, _ in tools:
            w = sorted(walls[name])
            print(f"  {job:<10}{name:<22}{w[0]:>8.2f}{w[len(w) // 2]:>10.2f}{rss[name]:>14.0f}  {checks.get(name, '')}")
        best = {name: min(w) for name, w in walls.items()}
        median = {name: sorted(w)[len(w) // 2] for name, w in walls.items()}
        print(f"\n  cuckoo -c / cuckoo --exact: {best['cuckoo -c'] / best['cuckoo --exact']:.2f}x by min, "
              f"{median['cuckoo -c'] / median['cuckoo --exact']:.2f}x by median (target <= 2)")
        for ours_name, peers in (("cuckoo -c", ("sort | uniq -c", "pandas value_counts", "DuckDB GROUP BY")),
                                 ("cuckoo -d", ("sort | uniq -d",)), ("cuckoo -u", ("sort | uniq -u",)),
                                 ("cuckoo --keep last", ("pandas keep='last'", "DuckDB QUALIFY")),
                                 ("cuckoo -z", ("sort -zu",))):
            for peer in peers:
                if peer in best:
                    print(f"  {ours_name} / {peer}: wall {best[ours_name] / best[peer]:.2f}x, peak RSS "
                          f"{rss[ours_name] / rss[peer]:.2f}x")
        name = f"cuckoo --window {window}"
        print(f"  {name}: peak RSS {rss[name] / rss[f'--exact, {window} keys']:.2f}x that of --exact over {window:,} "
              f"distinct lines (target <= 1); wall {best[name] / best['cuckoo --exact']:.2f}x --exact's over the input")
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
