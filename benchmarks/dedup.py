"""End-to-end dedup of text files: `cuckoo dedup --approx` (filter, 1 and N threads) and `cuckoo
dedup --exact` (an in-memory key set, the default) against DuckDB's ordered DISTINCT and Polars' `unique(maintain_order=True)` in
the same run (issue 28's inputs and targets); awk '!seen[$0]++' gives the reference output.

    pip install duckdb polars          # the peers (skipped, with a note, when missing)
    python benchmarks/dedup.py         # three inputs, 3 interleaved rounds
    python benchmarks/dedup.py --lines 1000000 --rounds 1 --inputs hex

`exact` runs with the default --memory (for a file: a quarter of its size, at least 128 MiB: 1-3
passes over these inputs, which stay in the page cache); `exact --memory 1G` is the same run in one
pass where the distinct lines fit, at more memory; `exact, from a pipe` reads the file through
`cat |`, as input that cannot be read again (compressed input too): one pass, its keys in memory
while they fit (its ratios to the peers are informative).

Inputs (built in a temporary directory, removed at the end):
  hex   10^7 lines of 16-24 hex bytes drawn uniformly from 5*10^6 ids (~4.3 M distinct)
  url   10^7 URL lines of 40-70 bytes drawn from 5*10^6 ids
  text  real text: every .py file of the Python installation (sys.base_prefix) and every man
        page (/usr/share/man, gunzipped), each file twice, shuffled by file; files that are not
        UTF-8 or hold a CR, NUL or 0x1f byte are left out (so that DuckDB and Polars read each
        line as one column)

Every tool runs in a fresh process; rounds interleave the tools (a change of machine load hits
them alike); min and median wall time and the largest peak RSS (/usr/bin/time -v, else
getrusage) are printed. Checks: the exact output equals awk's byte for byte; the filter's output
is a subsequence of awk's (only lines dropped by mistake, none changed, added or reordered), its
drops beside the number it expected. Then the ratio lines with the targets: exact <= 0.5x the
wall time of DuckDB and of Polars and <= 1/5 their peak RSS; filter <= 0.25x DuckDB's wall and
faster than exact; filter 1 -> N threads >= 1.6x.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Tuple

import numpy as np

M64 = (1 << 64) - 1
NL = b"\n"


def mix(x: np.ndarray, k: int) -> np.ndarray:
    """A bijective 64-bit mixer (the splitmix64 finalizer with a constant offset)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64((0x9E3779B97F4A7C15 * k) & M64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def line_bytes(ids: np.ndarray) -> bytes:
    """The text lines of `ids`: 16 hex digits of mix(id, 1) (distinct per id), then 0-8 more hex
    digits of mix(id, 2), then '\\n': 16-24 bytes of key per line."""
    a = mix(ids, 1)
    b = mix(ids, 2)
    n = len(ids)
    rows = np.empty((n, 25), dtype=np.uint8)
    for j in range(16):
        rows[:, j] = HEX[((a >> np.uint64(4 * (15 - j))) & np.uint64(15)).astype(np.intp)]
    for j in range(8):
        rows[:, 16 + j] = HEX[((b >> np.uint64(4 * j)) & np.uint64(15)).astype(np.intp)]
    length = 16 + (b >> np.uint64(60)).astype(np.int64) % 9  # key length 16..24
    rows[np.arange(n), length] = 10
    keep = np.arange(25)[None, :] <= length[:, None]
    return rows[keep].tobytes()


def run_measured(cmd: List[str], stdout_path: str, env: dict) -> Tuple[float, float, float, str]:
    """Runs cmd > stdout_path; returns (wall seconds, CPU seconds (user + system), peak RSS MiB,
    stderr)."""
    gnu_time = shutil.which("time") if os.path.exists("/usr/bin/time") else None
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as tf:
        time_file = tf.name
    try:
        if gnu_time:
            full = ["/usr/bin/time", "-v", "-o", time_file] + cmd
            t0 = time.perf_counter()
            with open(stdout_path, "wb") as out:
                proc = subprocess.run(full, stdout=out, stderr=subprocess.PIPE, env=env)
            wall = time.perf_counter() - t0
            text = open(time_file).read()
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
            rss = int(m.group(1)) / 1024 if m else float("nan")
            cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): (\S+)", text))
            m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
            if m:
                parts = [float(p) for p in m.group(1).split(":")]
                wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
        else:
            helper = (
                "import resource, subprocess, sys, time\n"
                "t0 = time.perf_counter()\n"
                "with open(sys.argv[1], 'wb') as out:\n"
                "    rc = subprocess.run(sys.argv[2:], stdout=out).returncode\n"
                "wall = time.perf_counter() - t0\n"
                "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                "print(wall, r.ru_maxrss, r.ru_utime + r.ru_stime, rc, file=sys.stderr)\n"
                "sys.exit(rc)\n"
            )
            proc = subprocess.run([sys.executable, "-c", helper, stdout_path] + cmd,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            last = proc.stderr.decode().strip().splitlines()[-1].split()
            wall, rss, cpu = float(last[0]), int(last[1]) / 1024, float(last[2])
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed with exit code {proc.returncode}: {proc.stderr.decode()[-500:]}")
        return wall, cpu, rss, proc.stderr.decode()
    finally:
        os.unlink(time_file)


# Order-preserving dedup of the file's lines in DuckDB and Polars, each in a fresh interpreter
# (argv: input, output). Each line is one column: the delimiter is 0x1f, which no input holds,
# and quoting is off.
DUCKDB_SCRIPT = """
import sys, duckdb
con = duckdb.connect()
con.execute(f\"\"\"COPY (SELECT line FROM (SELECT line, row_number() OVER () AS rn
    FROM read_csv('{sys.argv[1]}', header=false, columns={{'line': 'VARCHAR'}}, delim='\\x1f', quote='', escape=''))
    GROUP BY line ORDER BY min(rn)) TO '{sys.argv[2]}' (HEADER false, QUOTE '')\"\"\")
"""
POLARS_SCRIPT = """
import sys, polars as pl
df = pl.read_csv(sys.argv[1], has_header=False, new_columns=["line"], separator="\\x1f", quote_char=None)
df.unique(maintain_order=True).write_csv(sys.argv[2], include_header=False, quote_style="never")
"""


def have(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def cuckoo_command() -> List[str]:
    script = os.path.join(os.path.dirname(sys.executable), "cuckoo")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-m", "cuckoo"]


M64 = (1 << 64) - 1


def hex_input(path: str, n: int, ids_space: int, seed: int) -> None:
    """n lines of 16-24 hex bytes (line_bytes) of ids drawn uniformly from [0, ids_space)."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as fh:
        for k in range(0, n, 1_000_000):
            fh.write(line_bytes(rng.integers(0, ids_space, size=min(1_000_000, n - k), dtype=np.uint64)))


def url_input(path: str, n: int, ids_space: int, seed: int) -> None:
    """n URL lines of 42-70 bytes (without the newline) of ids drawn uniformly from [0, ids_space):
    https://sNNN.example.com/<16 hex>/<0-28 hex> (host, digits and length derived from the id)."""
    rng = np.random.default_rng(seed + 1)
    prefix = np.frombuffer(b"https://s000.example.com/", dtype=np.uint8)
    with open(path, "wb") as fh:
        for k in range(0, n, 1_000_000):
            ids = rng.integers(0, ids_space, size=min(1_000_000, n - k), dtype=np.uint64)
            words = (mix(ids, 3), mix(ids, 4), mix(ids, 5))
            m = len(ids)
            p = len(prefix)
            rows = np.empty((m, p + 16 + 1 + 28 + 1), dtype=np.uint8)
            rows[:, :p] = prefix
            host = (words[0] % np.uint64(1000)).astype(np.int64)
            for j, div in enumerate((100, 10, 1)):
                rows[:, 9 + j] = 48 + (host // div) % 10
            rows[:, p + 16] = ord("/")
            for j in range(16 + 28):  # 16 hex digits of the first word, then up to 28 of the others
                w = words[j // 16]
                rows[:, p + j + (j >= 16)] = HEX[((w >> np.uint64(4 * (j % 16))) & np.uint64(15)).astype(np.intp)]
            length = p + 17 + (words[1] >> np.uint64(58)).astype(np.int64) % 29  # key length 42..70
            rows[np.arange(m), length] = 10
            keep = np.arange(rows.shape[1])[None, :] <= length[:, None]
            fh.write(rows[keep].tobytes())


def text_input(path: str, seed: int) -> int:
    """Real text (see the module docstring); returns the number of files used (each twice)."""
    import gzip

    files = []
    for root in (sys.base_prefix, "/usr/share/man"):
        for dirpath, _, names in os.walk(root):
            for name in names:
                if not name.endswith(".gz" if root == "/usr/share/man" else ".py"):
                    continue
                files.append(os.path.join(dirpath, name))
    texts = []
    for f in sorted(files):
        try:
            data = gzip.open(f).read() if f.endswith(".gz") else open(f, "rb").read()
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        if b"\r" in data or b"\x00" in data or b"\x1f" in data or not data:
            continue
        texts.append(data if data.endswith(b"\n") else data + b"\n")
    order = np.random.default_rng(seed + 2).permutation(2 * len(texts)) % len(texts)
    with open(path, "wb") as fh:
        for k in order.tolist():
            fh.write(texts[k])
    return len(texts)


def is_subsequence(got: bytes, ref: bytes) -> Tuple[bool, int]:
    """Whether the lines of `got` are the lines of `ref` with some left out (none changed, added
    or reordered), and how many were left out."""
    g, r = got.split(b"\n"), ref.split(b"\n")
    j = 0
    for line in g:
        while j < len(r) and r[j] != line:
            j += 1
        if j == len(r):
            return False, -1
        j += 1
    return True, len(r) - len(g)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000_000, help="lines of the hex and url inputs (default 10^7)")
    ap.add_argument("--ids", type=int, default=5_000_000, help="ids the lines are drawn from (default 5*10^6)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--inputs", default="hex,url,text", help="which inputs, comma-separated (default all)")
    ap.add_argument("--threads", type=int, default=None, help="threads of the N-thread runs (default: cores)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where to put the temporary directory (default: system temp)")
    args = ap.parse_args(argv)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _machine import header

    threads = args.threads or len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(header())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; timing by "
          f"{'/usr/bin/time -v' if os.path.exists('/usr/bin/time') else 'getrusage'}; {args.rounds} rounds")
    missing = [m for m in ("duckdb", "polars") if not have(m)]
    if missing:
        print(f"not installed (pip install {' '.join(missing)}): their columns are left out")
    env = dict(os.environ, LC_ALL="C")
    awk = shutil.which("awk")
    ok = True
    tmp = tempfile.mkdtemp(prefix="cuckoo-dedup-bench-", dir=args.dir)
    try:
        for which in args.inputs.split(","):
            path = os.path.join(tmp, f"{which}.txt")
            t0 = time.perf_counter()
            if which == "hex":
                hex_input(path, args.lines, args.ids, args.seed)
                what = f"{args.lines:,} hex lines of 16-24 bytes from {args.ids:,} ids"
            elif which == "url":
                url_input(path, args.lines, args.ids, args.seed)
                what = f"{args.lines:,} URL lines of 42-70 bytes from {args.ids:,} ids"
            else:
                nfiles = text_input(path, args.seed)
                what = f"real text: {nfiles:,} files (.py and man pages), each twice, shuffled"
            size = os.path.getsize(path)
            with open(path, "rb") as fh:
                n_lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
            print(f"\n== {which}: {what}; {size / 2**20:.0f} MiB, {n_lines:,} lines (built in "
                  f"{time.perf_counter() - t0:.0f} s)")
            ref = None
            if awk:
                wall, _, rss, _ = run_measured([awk, "!seen[$0]++", path], os.path.join(tmp, "awk.out"), env)
                with open(os.path.join(tmp, "awk.out"), "rb") as fh:
                    ref = fh.read()
                print(f"  awk '!seen[$0]++' (reference, once): {wall:.2f} s, {rss:.0f} MiB, "
                      f"{ref.count(NL):,} distinct lines")
            tools = [("filter, 1 thread", cuckoo_command() + ["dedup", "--approx", "--threads", "1", path], "f1.out"),
                     (f"filter, {threads} threads", cuckoo_command() + ["dedup", "--approx", "--threads", str(threads),
                                                                         path], "fn.out"),
                     ("exact", cuckoo_command() + ["dedup", "--exact", "--threads", str(threads), path], "exact.out"),
                     ("exact --memory 1G", cuckoo_command() + ["dedup", "--exact", "--memory", "1G", "--threads",
                                                                str(threads), path], "exact1g.out"),
                     # input read once (as compressed input is): one pass, no passes planned
                     ("exact, from a pipe", ["sh", "-c", f"cat {shlex.quote(path)} | " + shlex.join(
                         cuckoo_command() + ["dedup", "--exact", "--threads", str(threads)])], "exactpipe.out")]
            if have("duckdb"):
                tools.append(("DuckDB", [sys.executable, "-c", DUCKDB_SCRIPT, path, os.path.join(tmp, "duckdb.out")],
                              "duckdb.log"))
            if have("polars"):
                tools.append(("Polars", [sys.executable, "-c", POLARS_SCRIPT, path, os.path.join(tmp, "polars.out")],
                              "polars.log"))
            walls: dict = {name: [] for name, _, _ in tools}
            rss: dict = {name: 0.0 for name, _, _ in tools}
            stderr: dict = {}
            for _ in range(max(args.rounds, 1)):
                for name, cmd, out in tools:
                    w, _, r, err = run_measured(cmd, os.path.join(tmp, out), env)
                    walls[name].append(w)
                    rss[name] = max(rss[name], r)
                    stderr[name] = err
            print(f"  {'tool':<22}{'min s':>8}{'median s':>10}{'peak RSS MiB':>14}{'MB/s':>8}")
            for name, _, _ in tools:
                w = sorted(walls[name])
                print(f"  {name:<22}{w[0]:>8.2f}{w[len(w) // 2]:>10.2f}{rss[name]:>14.0f}{size / 1e6 / w[0]:>8.0f}")
            for name in ("exact", "exact --memory 1G"):
                m = re.search(r"(\d+) pass", stderr[name])
                print(f"  {name}: {m.group(1) if m else '?'} pass(es) over the input")
            if ref is not None:
                for name, out in (("exact", "exact.out"), ("exact --memory 1G", "exact1g.out"),
                                  ("exact, from a pipe", "exactpipe.out")):
                    with open(os.path.join(tmp, out), "rb") as fh:
                        exact_same = fh.read() == ref
                    print(f"  {name} output byte-identical to awk's: {exact_same}")
                    ok &= exact_same
                for name, out in ((tools[0][0], "f1.out"), (tools[1][0], "fn.out")):
                    with open(os.path.join(tmp, out), "rb") as fh:
                        sub, dropped = is_subsequence(fh.read(), ref)
                    m = re.search(r"expected unique lines wrongly dropped: (\S+)", stderr[name])
                    print(f"  {name}: a subsequence of awk's output: {sub}; {dropped} lines dropped by mistake "
                          f"(it expected {m.group(1) if m else '?'})")
                    ok &= sub
                for peer, out in (("DuckDB", "duckdb.out"), ("Polars", "polars.out")):
                    if peer in walls:
                        with open(os.path.join(tmp, out), "rb") as fh:
                            print(f"  {peer} output equals awk's: {fh.read() == ref} (informative)")
            best = {name: min(w) for name, w in walls.items()}
            f1, fn, ex = best[tools[0][0]], best[tools[1][0]], best["exact"]
            for peer in ("DuckDB", "Polars"):
                if peer in best:
                    for name in ("exact", "exact --memory 1G"):
                        print(f"  {name} / {peer}: wall {best[name] / best[peer]:.2f}x (target <= 0.5), peak RSS "
                              f"{rss[name] / rss[peer]:.2f}x (target <= 0.2)")
                    name = "exact, from a pipe"
                    print(f"  {name} / {peer}: wall {best[name] / best[peer]:.2f}x, peak RSS "
                          f"{rss[name] / rss[peer]:.2f}x (informative: {peer} reads the file)")
            if "DuckDB" in best:
                print(f"  filter ({threads} threads) / DuckDB: wall {fn / best['DuckDB']:.2f}x (target <= 0.25)")
            # The thread ratio by min and by median: on a shared host the one-thread runs find a
            # quiet moment more often than the two-thread ones, which need both cores at once.
            median = {name: sorted(w)[len(w) // 2] for name, w in walls.items()}
            m1, mn = median[tools[0][0]], median[tools[1][0]]
            print(f"  filter / exact: wall {fn / ex:.2f}x (target < 1); filter 1 -> {threads} threads: "
                  f"{f1 / fn:.2f}x by min, {m1 / mn:.2f}x by median (target >= 1.6)")
            os.unlink(path)
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    raise SystemExit(main())
