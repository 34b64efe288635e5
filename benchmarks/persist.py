"""Persistence benchmark: how fast a large saved filter opens, answers, and how much memory it takes.

    python benchmarks/persist.py                  # ~1 GiB filter (f=16, b=4), filled to 5%
    python benchmarks/persist.py --gib 0.25 --fill 0.5 --dir /some/disk

Builds a filter whose table is about --gib GiB, fills it to --fill of its capacity (filling 1 GiB
completely takes minutes and says nothing more about loading: how fast a table opens does not
depend on what is in it), saves it, and then, for each way of opening it, runs a FRESH Python
process that measures:

  open     time of Filter.load(path, mmap=True) / load(path, mmap=True, verify=True) /
           load(path) / from_bytes(open(path).read()) (the read is timed separately)
  lookups  contains_many over 10^5 keys (half present, half absent) right after opening
           (page faults included), and the same keys once more (warm)
  RSS      peak resident memory (getrusage ru_maxrss) after opening and at the end, next to the
           file size; and at the end, how much of the resident memory is file-backed (pages of the
           mapped file, shared with the page cache and dropped by the kernel under memory pressure)
           versus anonymous (private memory of the process), from /proc/self/status (Linux).

A last fresh process maps the file and reports its resident memory after 0, 10^2, 10^3, 10^4 and
10^5 lookups: private memory stays flat, file-backed pages grow with the pages lookups touch.

Streams (issue 22): in fresh processes holding the filter in memory (load without mmap), the
peak RSS of save(path), save(file object) and to_bytes() above the peak before the call; and the
peak RSS of load(file object) and load(path) above the filter's nbytes. A file object is written
and read in chunks of at most 1 MiB: its save should peak a few MiB above the filter, to_bytes a
whole copy above it.

Ratios: open time relative to load(mmap=True); lookup time relative to the in-memory filter
(load without mmap); peak RSS relative to the file size. The file was just written, so it is in
the page cache: lookups on a cold cache would wait for the disk, opening would not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

MODES = ["mmap", "mmap+verify", "load", "from_bytes"]
LOOKUPS = 100_000


def rss_peak_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def proc_status() -> dict:
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def child(mode: str, path: str, keys_path: str) -> None:
    import cuckoo

    keys = np.load(keys_path)
    present, absent = keys["present"], keys["absent"]
    probe = np.concatenate([present[: LOOKUPS // 2], absent[: LOOKUPS // 2]])
    base_rss = rss_peak_bytes()
    read_s = 0.0
    t0 = time.perf_counter()
    if mode == "mmap":
        f = cuckoo.Filter.load(path, mmap=True)
    elif mode == "mmap+verify":
        f = cuckoo.Filter.load(path, mmap=True, verify=True)
    elif mode == "load":
        f = cuckoo.Filter.load(path)
    else:
        with open(path, "rb") as fh:
            data = fh.read()
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        f = cuckoo.Filter.from_bytes(data)
    open_s = time.perf_counter() - t0
    open_rss = rss_peak_bytes()
    if mode == "from_bytes":
        del data
    t0 = time.perf_counter()
    found = f.contains_many(probe)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = f.contains_many(probe)
    second_s = time.perf_counter() - t0
    assert found[: LOOKUPS // 2].all(), "a present key was not found"
    assert np.array_equal(found, again)
    json.dump(
        dict(mode=mode, read_s=read_s, open_s=open_s, first_s=first_s, second_s=second_s,
             fp=int(found[LOOKUPS // 2 :].sum()), base_rss=base_rss, open_rss=open_rss,
             end_rss=rss_peak_bytes(), status=proc_status(), read_only=f.read_only, items=len(f)),
        sys.stdout,
    )


def child_rss(path: str, keys_path: str) -> None:
    """Resident memory of a mapped filter as lookups touch more of it."""
    import cuckoo

    keys = np.load(keys_path)
    probe = np.concatenate([keys["present"][: LOOKUPS // 2], keys["absent"][: LOOKUPS // 2]])
    np.random.default_rng(0).shuffle(probe)
    f = cuckoo.Filter.load(path, mmap=True)
    rows = [(0, proc_status(), rss_peak_bytes())]
    done = 0
    for n in (100, 1000, 10_000, LOOKUPS):
        f.contains_many(probe[done:n])
        done = n
        rows.append((n, proc_status(), rss_peak_bytes()))
    json.dump(rows, sys.stdout)


STREAM_MODES = ["save(path)", "save(file)", "to_bytes()", "load(file)", "load(path)"]


def child_stream(mode: str, path: str, out: str) -> None:
    """Peak RSS (ru_maxrss) of one save or load, in a fresh process."""
    import cuckoo

    base = rss_peak_bytes()
    if mode.startswith("save") or mode == "to_bytes()":
        with open(path, "rb") as fh:  # load(path) would peak at twice the filter (mapping + copy)
            f = cuckoo.Filter.load(fh)
        before = rss_peak_bytes()
        t0 = time.perf_counter()
        if mode == "save(path)":
            f.save(out)
        elif mode == "save(file)":
            with open(out, "wb") as fh:
                f.save(fh)
        else:
            data = f.to_bytes()
            assert len(data) == os.path.getsize(path)
            del data
        seconds = time.perf_counter() - t0
    else:
        before = base
        t0 = time.perf_counter()
        if mode == "load(file)":
            with open(path, "rb") as fh:
                f = cuckoo.Filter.load(fh)
        else:
            f = cuckoo.Filter.load(path)
        seconds = time.perf_counter() - t0
    json.dump(dict(mode=mode, base=base, before=before, peak=rss_peak_bytes(), nbytes=f.nbytes, seconds=seconds),
              sys.stdout)


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def build(path: str, keys_path: str, gib: float, fill: float) -> None:
    import cuckoo

    f_bits, b = 16, 4
    buckets = int(gib * 2**30) // (b * f_bits // 8)
    capacity = int(buckets * b * 0.935)
    f = cuckoo.Filter(capacity, fingerprint_bits=f_bits, bucket_size=b)
    n = int(capacity * fill)
    rng = np.random.default_rng(42)
    present = None
    t0 = time.perf_counter()
    for start in range(0, n, 1 << 22):
        chunk = rng.integers(0, 2**63, size=min(1 << 22, n - start), dtype=np.uint64)  # top bit clear
        f.add_many(chunk)
        if present is None:
            present = chunk[:LOOKUPS]
    fill_s = time.perf_counter() - t0
    absent = rng.integers(0, 2**63, size=LOOKUPS, dtype=np.uint64) | np.uint64(1 << 63)  # top bit set
    np.savez(keys_path, present=present, absent=absent)
    t0 = time.perf_counter()
    f.save(path)
    save_s = time.perf_counter() - t0
    size = os.path.getsize(path)
    print(f"filter: {f!r}")
    print(f"filled {n:,} keys ({fill:.0%} of capacity {capacity:,}) in {fill_s:.1f} s; "
          f"save (write + fsync + rename): {save_s:.2f} s; file: {size:,} bytes ({size / 2**30:.3f} GiB)")


def run(*args: str) -> str:
    return subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0, help="table size in GiB (default 1)")
    ap.add_argument("--fill", type=float, default=0.05, help="fraction of capacity to fill (default 0.05)")
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temporary directory)")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "PATH", "KEYS"), help=argparse.SUPPRESS)
    ap.add_argument("--build", nargs=2, metavar=("PATH", "KEYS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child[0] == "mmap-rss":
            child_rss(*args.child[1:])
        elif args.child[0] in STREAM_MODES:
            child_stream(*args.child)
        else:
            child(*args.child)
        return
    if args.build:
        build(*args.build, args.gib, args.fill)
        return

    # This process stays small and never imports cuckoo: the filter is built in one child and
    # measured in others. (Linux carries a parent's peak RSS into ru_maxrss of a child it spawns,
    # so a parent holding the big filter would inflate every child's figure.)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "bench.cuckoo")
        keys_path = os.path.join(tmp, "keys.npz")
        print(run("--build", path, keys_path, "--gib", str(args.gib), "--fill", str(args.fill)), end="")
        size = os.path.getsize(path)
        results = {mode: json.loads(run("--child", mode, path, keys_path)) for mode in MODES}
        rss_rows = json.loads(run("--child", "mmap-rss", path, keys_path))
        out = os.path.join(tmp, "saved.cuckoo")
        streams = [json.loads(run("--child", mode, path, out)) for mode in STREAM_MODES]

    base_open = results["mmap"]["open_s"]
    base_lookup = results["load"]["second_s"]
    print(f"\nfresh process per row; {LOOKUPS:,} lookups (half present, half absent); page cache warm\n")
    head = (f"{'mode':<12} {'open s':>8} {'x mmap':>8} {'lookups ms':>10} {'ns/key':>7} {'x mem':>6} "
            f"{'again ms':>9} {'x mem':>6} {'peak RSS MiB':>13} {'/file':>6} {'end RSS MiB':>12} {'/file':>6} "
            f"{'anon MiB':>9} {'file MiB':>9}")
    print(head)
    print("-" * len(head))
    for mode in MODES:
        r = results[mode]
        st = r["status"]
        open_s = r["open_s"] + r["read_s"]
        print(f"{mode:<12} {open_s:>8.4f} {open_s / base_open:>8.0f} {r['first_s'] * 1e3:>10.1f} "
              f"{r['first_s'] * 1e9 / LOOKUPS:>7.0f} {r['first_s'] / base_lookup:>6.1f} {r['second_s'] * 1e3:>9.1f} "
              f"{r['second_s'] / base_lookup:>6.1f} {mib(r['open_rss']):>13} {r['open_rss'] / size:>6.2f} "
              f"{mib(r['end_rss']):>12} {r['end_rss'] / size:>6.2f} {mib(st.get('RssAnon', 0)):>9} "
              f"{mib(st.get('RssFile', 0)):>9}")
    r = results["from_bytes"]
    print(f"\nopen: the call that returns the filter (from_bytes row: read {r['read_s']:.3f} s + from_bytes "
          f"{r['open_s']:.3f} s). x mmap: open time / load(mmap=True)'s. x mem: lookup time / the in-memory "
          f"filter's (load row, second pass).")
    print(f"peak RSS: ru_maxrss after opening (before any lookup) and at the end; a fresh process peaks at "
          f"{mib(results['mmap']['base_rss'])} MiB before opening. /file: divided by the file size.")
    print("anon / file MiB: resident memory at the end (/proc/self/status RssAnon / RssFile): private memory vs "
          "file-backed pages (the mapped table's pages that lookups touched, plus shared libraries); "
          "file-backed pages are the page cache's, shared and reclaimable.")
    print(f"\nload(mmap=True), then lookups of random keys (fresh process): resident memory as they touch the table "
          f"(file {mib(size)} MiB)\n")
    print(f"{'lookups':>8} {'peak RSS MiB':>13} {'/file':>6} {'anon MiB':>9} {'file MiB':>9}")
    for n, st, peak in rss_rows:
        print(f"{n:>8,} {mib(peak):>13} {peak / size:>6.2f} {mib(st.get('RssAnon', 0)):>9} {mib(st.get('RssFile', 0)):>9}")
    print("file-backed pages grow faster than the pages lookups touch: a page fault also maps the neighbouring "
          "pages already in the page cache (Linux fault-around; with large page-cache folios, up to a folio of "
          "2 MiB per fault). They are the page cache's, shared by every process mapping the file.")

    print(f"\nstreams: one fresh process per row; file {mib(size)} MiB; the filter's nbytes "
          f"{mib(streams[0]['nbytes'])} MiB\n")
    print(f"{'call':<12} {'s':>7} {'peak RSS MiB':>13} {'excess MiB':>11} {'/ nbytes':>9}")
    for r in streams:
        saving = r["mode"].startswith("save") or r["mode"] == "to_bytes()"
        excess = r["peak"] - r["before"] if saving else r["peak"] - r["base"] - r["nbytes"]
        print(f"{r['mode']:<12} {r['seconds']:>7.2f} {mib(r['peak']):>13} {excess / 2**20:>11.1f} "
              f"{excess / r['nbytes']:>9.3f}")
    print("excess: for save and to_bytes, the peak RSS of the call above the peak before it (the filter already "
          "loaded); for load, the peak RSS above a fresh process's peak plus the filter's nbytes.")


if __name__ == "__main__":
    main()
