"""The filter subcommands (dedup with a filter, build, query, info) and the filter files
they read and write."""

from __future__ import annotations

import argparse
import os
import time
from typing import List, Optional, Tuple

from cuckoo._numpy import np

import cuckoo
from cuckoo import Filter, FilterFullError
from cuckoo._grow import growable_version
from cuckoo._dedup.records import RecordError

from cuckoo._dedup.outputs import check_run_files, same_file

from .common import BUILD_FPR, CliError, DEDUP_FPR, EXIT_FILTER_FILE, EXIT_FULL, EXIT_OK, EXIT_USAGE, _one_line
from cuckoo._dedup.engine import dedup
from cuckoo._dedup.estimate import sized_filter, vector_bucket_size
from cuckoo._dedup.sources import Source, iter_blocks, sources_of
from .output import (
    Output, Progress, _bytes, _note, _progress_enabled, _small, finish_outputs, inputs_of, note_run, refuse_clobber,
    unit_of, write_stdout,
)
from .records import cmd_dedup_columnar, columnar_input, dropped_sink, framing_from_args, record_error
from .stores import cmd_dedup_exact


def load_filter(path: str, writable: bool = False, **load_options: bool) -> Filter:
    """Filter.load(path, **load_options), with every failure turned into a one-line exit-2 error."""
    prefix = f"cuckoo: cannot read filter file '{path}'"
    if not os.path.exists(path):
        raise CliError(f"{prefix}: No such file or directory", EXIT_FILTER_FILE)
    load = getattr(Filter, "load", None)
    if load is None:
        raise CliError(f"{prefix}: this build of cuckoo has no Filter.load", EXIT_FILTER_FILE)
    try:
        f = load(path, **load_options)
    except (OSError, cuckoo.CuckooError, ValueError, TypeError, EOFError, MemoryError, OverflowError) as exc:
        raise CliError(f"{prefix}: {_one_line(exc)}", EXIT_FILTER_FILE) from None
    if not isinstance(f, Filter):
        raise CliError(f"{prefix}: not a cuckoo filter", EXIT_FILTER_FILE)
    if writable and getattr(f, "read_only", False):
        f = f.copy()
    return f


def check_can_save(path: str) -> None:
    if not hasattr(Filter, "save"):
        raise CliError(f"cuckoo: cannot write filter file '{path}': this build of cuckoo has no Filter.save",
                       EXIT_FILTER_FILE)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"cuckoo: cannot write filter file '{path}': no directory {parent}", EXIT_FILTER_FILE)


def save_filter(f: Filter, path: str) -> None:
    try:
        f.save(path)  # type: ignore[attr-defined]
    except (OSError, cuckoo.CuckooError, ValueError) as exc:
        raise CliError(f"cuckoo: cannot write filter file '{path}': {_one_line(exc)}", EXIT_FILTER_FILE) from None


def full_error(command: str, f: Filter, line: int, exc: FilterFullError, stdin: bool, kept: str) -> CliError:
    """The exit-3 error: the filter filled (or cannot hold the key) at input line `line` (1-based);
    `kept` says what holds the lines before it."""
    reason = getattr(exc, "reason", "full")
    if reason == "copies":
        what = ("the line's key already fills both of its buckets (a line repeated more than 2 x bucket_size "
                "times, or lines crafted to collide)")
        hint = ("drop --multiset to store each line once" if command == "build" else
                "give --seed (a secret seed is the default) if the input may be crafted")
    elif reason == "low_load":
        what = "the lines' keys collide far more than random keys (input crafted against the seed?)"
        hint = "use a secret seed (the default without --seed)"
    elif reason in ("memory", "max_stages"):
        what = "the filter cannot grow: " + " ".join(str(exc).split(";")[0].split(": ", 1)[-1].split())
        hint = "give --capacity N, or free memory"
    else:
        what = f"no room for it ({len(f):,} keys, capacity {f.capacity:,}, load {f.load_factor:.1%})"
        hint = ("the input size is unknown on stdin: give --capacity N (N >= the number of distinct lines)"
                if stdin else "give a larger --capacity")
    return CliError(f"cuckoo {command}: the filter is full at input line {line:,}: {what}; {kept}; {hint}", EXIT_FULL)


def _auto_filter(args: argparse.Namespace, sources: List[Source], fpr: float,
                 bucket_size: int = 4) -> Tuple[Filter, bool, str]:
    """The filter for dedup/build: loaded, fixed (--capacity) or automatic (growable, sized by an
    estimate of the distinct lines). New filters get --seed, else a secret random seed."""
    first_day = (getattr(args, "filter", None) and getattr(args, "save", None) and not os.path.exists(args.filter)
                 and os.path.abspath(args.filter) == os.path.abspath(args.save))
    if first_day:  # --filter F --save F before F exists (the first day of a daily dedup): a new filter
        _note(args, f"cuckoo dedup: {args.filter} does not exist yet: starting from an empty filter, saved there")
    elif getattr(args, "filter", None):
        f = load_filter(args.filter, writable=True)
        # The README's resume after exit 3 (--save, then --filter) loads a full fixed filter: it
        # grows from there, like a filter this command sizes itself (no --capacity).
        g = growable_version(f)
        if g is None:
            return f, False, f"loaded from {args.filter}"
        return g, True, f"loaded from {args.filter}" + ("" if f.growable else ", growable")
    return sized_filter(sources, args.block_size, fpr, args.seed, args.capacity, getattr(args, "expansion", None),
                        bucket_size, b"\0" if getattr(args, "zero_terminated", False) else b"\n")


def _on_stdin(sources: List[Source]) -> bool:
    return any(s.is_stdin or s.regular_size() is None for s in sources)


def approximate(args: argparse.Namespace) -> bool:
    """Whether dedup uses the filter: when asked (--approx, or an option only the filter has);
    exact otherwise. Refuses --exact or --store with the filter's options."""
    asked = [opt for opt, given in (("--approx", args.approx), ("--fpr", args.fpr is not None),
                                    ("--capacity", args.capacity is not None), ("--filter", args.filter),
                                    ("--save", args.save), ("--seed", args.seed is not None)) if given]
    exact = [opt for opt, given in (("--exact", args.exact), ("--store", args.store),
                                    ("--memory", args.memory is not None), ("--count", args.count),
                                    ("--repeated", args.repeated), ("--unique-only", args.unique_only),
                                    ("--keep last", args.keep == "last")) if given]
    if asked and exact:
        raise CliError(f"cuckoo dedup: {asked[0]} is for the filter (approximate); {exact[0]} is exact dedup: "
                       f"give one or the other", EXIT_USAGE)
    return bool(asked)


def cmd_dedup(args: argparse.Namespace) -> int:
    if args.time_key is not None and args.window is None:
        raise CliError("cuckoo dedup: --time-key names the event time of a --window DURATION", EXIT_USAGE)
    if args.window is not None:
        return cmd_dedup_window(args)
    args.exact = not approximate(args)
    if columnar_input(args):
        return cmd_dedup_columnar(args)
    if args.memory is not None and args.store:
        raise CliError("cuckoo dedup: --memory is for the in-memory key set, not --store", EXIT_USAGE)
    if args.exact:
        return cmd_dedup_exact(args)
    sources = sources_of(args.files)
    framing = framing_from_args(args)
    # The one clobber rule (cuckoo._dedup.outputs): no file written is read or written twice;
    # --filter F --save F (F updated in place) is the one file both read and written.
    reads = [] if not args.filter or args.save and same_file(args.save, args.filter) else [
        (args.filter, f"the filter file '{args.filter}'")]
    check_run_files([p for p, _ in inputs_of(sources)], [(args.output, "output"), (args.dropped, "--dropped file"),
                                                          (args.save, "--save file")], reads)
    if args.save:
        check_can_save(args.save)
    if args.filter and (args.capacity is not None or args.fpr is not None or args.seed is not None):
        raise CliError("cuckoo dedup: --filter takes the loaded filter's parameters: drop --capacity/--fpr/--seed",
                       EXIT_USAGE)
    fpr = args.fpr if args.fpr is not None else DEDUP_FPR
    try:
        f, growable, how = _auto_filter(args, sources, fpr, vector_bucket_size(fpr))
    except ValueError as exc:  # a --capacity no filter holds (more than 2^32 buckets)
        raise CliError(f"cuckoo dedup: {_one_line(exc)}", EXIT_USAGE) from None
    out = Output(args.output, sources)
    dropped = dropped_sink(args, sources)
    progress = Progress(_progress_enabled(args), "dedup")
    failure: Optional[CliError] = None
    ok = False  # the outputs (and --save) are written only when the run succeeded
    try:
        r = dedup(sources, out, filter=f, threads=args.threads, block_size=args.block_size, progress=progress.update,
                  dropped=dropped, framing=framing)
        ok = True
    except RecordError as exc:  # a record without its key, invalid CSV or JSON: the outputs stay as they were
        failure = record_error(exc)
    except FilterFullError as exc:
        # Keep the work done (exit 3): the lines before the failing one are written, and the
        # filter (holding exactly their keys) is saved below.
        r = exc.dedup_result  # type: ignore[attr-defined]
        done = (f"the {r.lines_read:,} lines before it are deduplicated in the output"
                + (f" and in the filter saved to {args.save}" if args.save else ""))
        failure = full_error("dedup", f, r.lines_read + 1, exc, _on_stdin(sources), done)
        ok = True
    finally:
        progress.done()
        finish_outputs(ok, out, dropped)
    if args.save and ok:
        save_filter(f, args.save)
    if failure is not None:
        raise failure
    unit = unit_of(framing)
    note_run(args, r, unit)
    _note(args, f"cuckoo dedup: approximate: expected unique {unit} wrongly dropped: {_small(r.expected_false_drops)} "
                f"(filter: {how}, {len(f):,} keys, {_bytes(f.nbytes)}, {f.fingerprint_bits}-bit fingerprints, "
                f"FPR now {f.expected_fpr:.2g})" + (f"; saved to {args.save}" if args.save else ""))
    return EXIT_OK


def cmd_dedup_window(args: argparse.Namespace) -> int:
    """dedup --window N | DURATION: one streaming pass, a record dropped when its key occurred
    within the window (cuckoo._dedup.windowed)."""
    from cuckoo._dedup.windowed import window_spec

    try:
        spec = window_spec(args.window)
    except ValueError as exc:
        raise CliError(f"cuckoo dedup: --window: {str(exc).replace('cuckoo.dedup: ', '')}", EXIT_USAGE) from None
    for opt, given in (("--store", args.store), ("--filter", args.filter), ("--save", args.save),
                       ("--capacity", args.capacity is not None), ("--memory", args.memory is not None),
                       ("--count", args.count), ("--repeated", args.repeated), ("--unique-only", args.unique_only),
                       ("--keep last", args.keep == "last")):
        if given:
            raise CliError(f"cuckoo dedup: {opt} is not for --window (one streaming pass with a state of its own)",
                           EXIT_USAGE)
    if args.exact and (args.fpr is not None or args.seed is not None or args.approx):
        raise CliError("cuckoo dedup: --fpr/--seed/--approx make the window approximate; --exact keeps every key",
                       EXIT_USAGE)
    exact = not (args.approx or args.fpr is not None or args.seed is not None)
    assert spec is not None
    sources = sources_of(args.files)
    check_run_files([p for p, _ in inputs_of(sources)], [(args.output, "output"), (args.dropped, "--dropped file")])
    framing = framing_from_args(args)
    out = Output(args.output, sources)
    dropped = dropped_sink(args, sources)
    progress = Progress(_progress_enabled(args), "dedup")
    ok = False
    try:
        r = dedup(sources, out, exact=exact, fpr=args.fpr, seed=args.seed, threads=args.threads,
                  block_size=args.block_size, progress=progress.update, dropped=dropped, framing=framing,
                  window=args.window, time_key=args.time_key)
        ok = True
    except RecordError as exc:
        raise record_error(exc) from None
    except ValueError as exc:
        raise CliError(f"cuckoo dedup: {_one_line(exc).replace('cuckoo.dedup: ', '')}", EXIT_USAGE) from None
    finally:
        progress.done()
        finish_outputs(ok, out, dropped)
    w = r.window_stats
    unit = unit_of(framing)
    note_run(args, r, unit)
    mode = ("exact" if r.exact else f"approximate: a new {unit[:-1]} dropped by mistake with probability at "
            f"most {w['fpr_bound']:.2g}")
    what = spec.describe().replace("arrival time", f"event time ({args.time_key})") if args.time_key else spec.describe()
    kept = "".join(f", {w[k]:,} {k} records kept" for k in ("late", "untimed") if w[k])
    _note(args, f"cuckoo dedup: window of {what}, {mode} ({w['keys']:,} keys held at the end, at most "
                f"{_bytes(w['peak_memory'])}{kept})")
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    sources = sources_of(args.files)
    refuse_clobber(args.output, "output", inputs_of(sources))
    check_can_save(args.output)
    fpr = args.fpr if args.fpr is not None else BUILD_FPR
    f, _, how = _auto_filter(args, sources, fpr)
    progress = Progress(_progress_enabled(args), "build")
    read = added = nbytes = 0
    failure: Optional[CliError] = None
    try:
        for lines, _last in iter_blocks(sources, args.block_size):
            mask, failed_at, exc = lines.insert(f, unique=not args.multiset)
            added += int(np.count_nonzero(mask))
            if failed_at is not None:
                read += failed_at
                assert exc is not None
                failure = full_error("build", f, read + 1, exc, _on_stdin(sources),
                                     f"the filter of the {read:,} lines before it is saved to {args.output}")
                break
            read += len(lines)
            nbytes += len(lines.buf)
            progress.update(read, nbytes)
    finally:
        progress.done()
    save_filter(f, args.output)
    if failure is not None:
        raise failure
    _note(args, f"cuckoo build: {read:,} lines, {added:,} keys added, {len(f):,} in the filter "
                f"({how}; load {f.load_factor:.1%}, {_bytes(f.nbytes)}, expected FPR {f.expected_fpr:.2g}) -> {args.output}")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    sources = sources_of(args.files)
    refuse_clobber(args.output, "output", [(args.filter, f"the filter file '{args.filter}'")])
    f = load_filter(args.filter)
    out = Output(args.output, sources)
    progress = Progress(_progress_enabled(args), "query")
    read = shown = nbytes = 0
    ok = False
    try:
        for lines, last_input in iter_blocks(sources, args.block_size):
            if args.count:
                counts = lines.apply(f.count_many, np.uint8)
                out.write(lines.with_prefix(counts, final=last_input))
                shown += int(np.count_nonzero(counts))
            else:
                present = lines.apply(f.contains_many, bool)
                shown += int(np.count_nonzero(present))
                out.write(lines.select(~present if args.absent else present, final=last_input))
            read += len(lines)
            nbytes += len(lines.buf)
            progress.update(read, nbytes)
        ok = True
    finally:
        progress.done()
        finish_outputs(ok, out)
    if args.verbose:
        absent = read - shown
        _note(args, f"cuckoo query: {read:,} lines, {shown:,} maybe present, {absent:,} absent")
    return EXIT_OK


# The filter properties `cuckoo info` reports, in this order (after the path and the key count).
_INFO_PROPERTIES = ("capacity", "load_factor", "bucket_count", "bucket_size", "slot_count", "fingerprint_bits",
                    "nbytes", "bits_per_item", "expected_fpr", "fpr_bound", "seed", "max_kicks")


def filter_info(f: Filter, path: Optional[str] = None) -> dict:
    info: dict = {}
    if path is not None:
        info["path"] = path
        info["file_bytes"] = os.path.getsize(path)
    info["keys"] = len(f)
    info.update((name, getattr(f, name)) for name in _INFO_PROPERTIES)
    for extra in ("growable", "semi_sort"):
        if hasattr(f, extra):
            info[extra] = getattr(f, extra)
    return info


def cmd_info(args: argparse.Namespace) -> int:
    # Memory-mapped: only the header is read and checked (its checksum, every field, the layout
    # against the file's size), so this is instant at any size; --verify also reads every table
    # (checksums, item counts) from the mapping, without a copy in memory.
    f = load_filter(args.filter, mmap=True, verify=args.verify)
    info = filter_info(f, args.filter)
    info["verified"] = args.verify
    if args.json:
        import json  # imported here: start-up of cuckoo dedup

        write_stdout(json.dumps(info, indent=2) + "\n")
        return EXIT_OK
    bpi = info["bits_per_item"]
    rows = [
        ("file", f"{args.filter} ({_bytes(info['file_bytes'])})"),
        ("keys", f"{info['keys']:,} of capacity {info['capacity']:,} (load {info['load_factor']:.1%} of "
                 f"{info['slot_count']:,} slots)"),
        ("table", f"{info['bucket_count']:,} buckets x {info['bucket_size']} slots x "
                  f"{info['fingerprint_bits']}-bit fingerprints"),
        ("memory", f"{_bytes(info['nbytes'])}" + (f" ({bpi:.1f} bits per key)" if info["keys"] else "")),
        ("expected FPR", f"{info['expected_fpr']:.3g} at the current load, {info['fpr_bound']:.3g} when full"),
        ("seed", str(info["seed"])),
        ("max_kicks", str(info["max_kicks"])),
    ]
    if "growable" in info:
        rows.append(("growable", str(info["growable"])))
    rows.append(("checked", "every byte (checksums, item counts)" if args.verify
                 else "the header (--verify reads and checks every byte)"))
    width = max(len(k) for k, _ in rows)
    write_stdout("".join(f"{k:<{width}}  {v}\n" for k, v in rows))
    return EXIT_OK
