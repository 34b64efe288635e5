"""The store subcommands (dedup --exact/--store, cuckoo store ...): exact dedup against a
log and the key-value store file on the command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, List, Optional, Union

from cuckoo._numpy import np

import cuckoo

from cuckoo._dedup.outputs import check_run_files

from .common import CliError, DEFAULT_BLOCK, EXIT_FILTER_FILE, EXIT_OK, EXIT_USAGE, _one_line
from cuckoo._dedup.records import RecordError

from cuckoo._dedup.engine import InputChangedError, KeyTooLongError, dedup
from cuckoo._dedup.resume import ResumeError, plan_run
from cuckoo._dedup.sources import iter_blocks, sources_of
from .records import dropped_sink, framing_from_args, record_error
from .output import (
    Output, Progress, _bytes, _note, _progress_enabled, finish_outputs, inputs_of, note_run, refuse_clobber, store_files,
    unit_of, write_stdout,
)



def line_too_long(command: str, line: int, limit: int) -> CliError:
    return CliError(f"{command}: input line {line:,} is longer than {limit:,} bytes, the longest key a store holds; "
                    f"the lines before it are done", EXIT_USAGE)


def open_store(path: Optional[str], readonly: bool = False) -> "cuckoo.Store":
    """A store for the CLI: errors on one line (exit 2), like filter files."""
    try:
        return cuckoo.Store(path, readonly=readonly)
    except cuckoo.StoreLockedError as exc:
        raise CliError(f"cuckoo: {exc}", EXIT_FILTER_FILE) from None
    except (OSError, ValueError, TypeError, MemoryError, cuckoo.CuckooError) as exc:
        raise CliError(f"cuckoo: cannot open store '{path}': {_one_line(exc)}", EXIT_FILTER_FILE) from None


def store_error(path: Optional[str], exc: BaseException) -> CliError:
    """A store that failed after it opened (an I/O error, a corrupt record, no memory): exit 2."""
    return CliError(f"cuckoo: store '{path or '(temporary)'}': {_one_line(exc)}", EXIT_FILTER_FILE)


STORE_ERRORS = (OSError, ValueError, TypeError, MemoryError, cuckoo.CuckooError)


def close_store(store: "cuckoo.Store", path: Optional[str], failing: bool) -> None:
    """Closes (syncs, snapshots) the store; an error is reported (exit 2) unless the command is
    already failing (`failing`), whose error then stays the one reported."""
    try:
        store.close()
    except STORE_ERRORS as exc:
        if not failing:
            raise store_error(path, exc) from None


def cmd_dedup_exact(args: argparse.Namespace) -> int:
    """dedup --exact / --store: every "seen" is checked against the key itself, kept in a log.

    With --store, a line is recorded in the store only once its output has been handed to the
    OS: each block is one store batch (cuckoo.Store.batch) that adds the block's keys, writes
    and flushes its new lines, and only then commits. Whatever stops a run (a kill, Ctrl-C, a
    closed pipe, a full disk, an error of the store itself), the store holds no line that was
    not written, so a rerun writes every line that no run wrote; the lines of the block being
    written when a run stopped may be written again (at least once, never lost). Into output
    files from input files, the run journal (cuckoo._dedup.resume) makes the rerun exact: it
    cuts the outputs and the store back to the last commit and goes on from there."""
    for opt in ("filter", "save", "capacity", "fpr", "seed"):
        if getattr(args, opt) is not None:
            raise CliError(f"cuckoo dedup: --{opt} is for the filter; --exact/--store keep every key exactly",
                           EXIT_USAGE)
    counting = [opt for opt, given in (("--count", args.count), ("--repeated", args.repeated),
                                       ("--unique-only", args.unique_only), ("--keep last", args.keep == "last"))
                if given]
    if counting and args.store:
        raise CliError(f"cuckoo dedup: {counting[0]} counts the keys of this input; --store dedups against other "
                       f"runs: give one or the other", EXIT_USAGE)
    if args.count_name != "count" and not args.count:
        raise CliError("cuckoo dedup: --count-name names the column or member that --count adds", EXIT_USAGE)
    sources = sources_of(args.files)
    owned = store_files(args.store) if args.store else []
    for src, _ in inputs_of(sources):
        refuse_clobber(src, "input", owned, "refusing to read what it writes")
    check_run_files([p for p, _ in inputs_of(sources)], [(args.output, "output"), (args.dropped, "--dropped file")],
                    owned)
    framing = framing_from_args(args)
    # --store with output files: the run journal (exactly-once reruns, cuckoo._dedup.resume),
    # planned before the store and the outputs are opened (a resumed run cuts them back).
    plan = None
    if args.store:
        try:
            plan = plan_run(args.store, args.output, args.dropped, sources, framing)
        except ResumeError as exc:
            raise CliError(str(exc), exc.code) from None
        except STORE_ERRORS as exc:
            raise store_error(args.store, exc) from None
        if plan is not None and plan.mode == "done":
            for src in sources:
                src.close()
            assert plan.point is not None
            _note(args, f"cuckoo dedup: this run already finished ({plan.point['records']:,} {unit_of(framing)} read, "
                        f"{plan.point['kept']:,} written to '{args.output}'): nothing to do")
            return EXIT_OK
    store = open_store(args.store) if args.store else None
    block = None if args.block_size == DEFAULT_BLOCK else args.block_size  # (each exact path has its own)
    progress = Progress(_progress_enabled(args), "dedup")
    failing = True
    try:
        out = Output(args.output, sources, atomic=not args.store, resume_at=plan.out_at if plan else None)
        dropped = None
        ok = False
        try:
            dropped = dropped_sink(args, sources, resume_at=plan.dropped_at if plan else None)
            r = dedup(sources, out, exact=True, store=store, threads=args.threads, block_size=block,
                      progress=progress.update, dropped=dropped, framing=framing,
                      memory=None if store is not None else args.memory, count=args.count,
                      repeated=args.repeated, unique_only=args.unique_only, keep=args.keep,
                      count_name=args.count_name, _run_plan=plan)
            ok = True
        except KeyTooLongError as exc:
            raise line_too_long("cuckoo dedup", exc.line, exc.limit) from None
        except RecordError as exc:  # a record without its key, invalid CSV or JSON: the records before are done
            raise record_error(exc) from None
        except InputChangedError as exc:  # (an input, not the store: exit 1)
            raise CliError(f"cuckoo dedup: {exc}", EXIT_USAGE) from None
        except ValueError as exc:  # (count options that this input or platform cannot take)
            if store is not None:
                raise
            raise CliError(f"cuckoo dedup: {_one_line(exc)}", EXIT_USAGE) from None
        except STORE_ERRORS as exc:
            raise store_error(args.store, exc) from None
        finally:
            progress.done()
            finish_outputs(ok, out, dropped)
        failing = False
    finally:
        if store is not None:
            close_store(store, args.store, failing)
    unit = unit_of(framing)
    one = unit[:-1]  # (a line, a record)
    note_run(args, r, unit)
    if r.exact_stats is not None and "ranges" in r.exact_stats:  # counts (--count, -d, -u, --keep last)
        ex = r.exact_stats
        _note(args, f"cuckoo dedup: exact counts: {ex['distinct']:,} keys, at most {_bytes(ex['peak_memory'])} of "
                    f"{'--memory ' if args.memory is not None else ''}{_bytes(ex['memory'])}"
                    f"{'' if args.memory is not None else ' (the default --memory)'}, {ex['passes']} passes over "
                    f"the input")
        return EXIT_OK
    if r.exact_stats is not None:
        ex = r.exact_stats
        passes = ex["passes"]
        budget = (f"--memory {_bytes(ex['memory'])}" if args.memory is not None
                  else f"{_bytes(ex['memory'])} (the default --memory)")
        if "spilled_at_line" in ex:  # input read once, past --memory: the keys went on in a store
            store = (f"store: {ex['distinct']:,} keys, log {_bytes(ex['store_log_bytes'])} in an anonymous temporary "
                     f"file, removed, index {_bytes(ex['store_index_bytes'])}")
            if ex["spilled_at_line"] == 0:
                where = f"{store}: the input, read once, was expected not to fit {budget}"
            else:
                where = (f"in memory up to {one} {ex['spilled_at_line']:,}: {ex['spilled_keys']:,} keys, at most "
                         f"{_bytes(ex['peak_memory'])} of {budget}; then a {store}")
            _note(args, f"cuckoo dedup: exact: no {one} wrongly dropped ({where})")
            return EXIT_OK
        _note(args, f"cuckoo dedup: exact: no {one} wrongly dropped (in memory: {ex['distinct']:,} keys, at most "
                    f"{_bytes(ex['peak_memory'])} of {budget}, {passes} pass"
                    f"{'' if passes == 1 else 'es'} over the input"
                    f"{'' if ex['planned'] == 1 else ', ' + str(ex['planned']) + ' planned ahead'})")
        return EXIT_OK
    st = r.store_stats
    assert st is not None
    run = st.get("run_journal")
    if run is not None and run["mode"] == "resume":
        cut = f"; {_bytes(run['store_bytes_cut'])} of uncommitted keys cut from the store" if run["store_bytes_cut"] else ""
        _note(args, f"cuckoo dedup: resumed the interrupted run after its {run['records_before']:,} {unit} "
                    f"({run['kept_before']:,} written before){cut}")
    where = args.store or "an anonymous temporary file, removed"
    _note(args, f"cuckoo dedup: exact: no {one} wrongly dropped (store: {st['live_keys']:,} keys, log "
                f"{_bytes(st['log_bytes'])} in {where}, index {_bytes(st['index_bytes'])}, "
                f"{st['log_reads_per_lookup']:.2f} log reads per {one})")
    return EXIT_OK


# ---- cuckoo store -----------------------------------------------------------------------------


def _store_key(text: str, as_int: bool) -> Union[int, bytes]:
    if not as_int:
        return os.fsencode(text)
    try:
        v = int(text, 0)
    except ValueError:
        raise CliError(f"cuckoo store: --int keys must be integers, got {text!r}", EXIT_USAGE) from None
    if not -(1 << 63) <= v < 1 << 64:
        raise CliError(f"cuckoo store: --int keys must fit in 64 bits ([-2**63, 2**64)), got {text!r}", EXIT_USAGE)
    return v


@contextlib.contextmanager
def using_store(path: str, readonly: bool = False) -> Iterator["cuckoo.Store"]:
    """The store at `path` for one subcommand, closed at the end; whatever fails in it (open,
    a read, a write, close) is one line on stderr and exit 2, never a traceback."""
    store = open_store(path, readonly)
    failing = True
    try:
        try:
            yield store
        except STORE_ERRORS as exc:
            raise store_error(path, exc) from None
        failing = False
    finally:
        close_store(store, path, failing)


def cmd_store_import(args: argparse.Namespace) -> int:
    """Appends the lines of FILEs: by default each line (with its newline, exactly as read) is the
    value of the key that is its number (0, 1, ... after the store's existing line keys), so that
    export writes the file back byte for byte; with --tsv, each line is KEY<TAB>VALUE."""
    sources = sources_of(args.files)
    for src, _ in inputs_of(sources):
        refuse_clobber(src, "input", store_files(args.store), "refusing to read what it writes")
    n = 0
    with using_store(args.store) as store:
        first = len(store) if not args.tsv else 0
        for lines, _ in iter_blocks(sources, args.block_size):
            data = lines.data
            starts = lines.starts.tolist()
            full = lines.full_lengths().tolist()
            if args.tsv:
                keys, values = [], []
                for st, ln, kl in zip(starts, full, lines.klen.tolist()):
                    row = data[st:st + kl]
                    tab = row.find(b"\t")
                    if tab < 0:
                        raise CliError(f"cuckoo store import: line {n + len(keys) + 1} has no TAB (--tsv wants "
                                       f"KEY<TAB>VALUE)", EXIT_USAGE)
                    keys.append(row[:tab])
                    values.append(row[tab + 1:])
            else:
                values = [data[st:st + ln] for st, ln in zip(starts, full)]
                if lines.virtual:
                    values[-1] = values[-1][:-1]  # the file's last line had no newline: keep it so
                keys = np.arange(first + n, first + n + len(values), dtype=np.uint64)
            store.put_many(keys, values)
            n += len(lines)
    _note(args, f"cuckoo store import: {n:,} records into {args.store}")
    return EXIT_OK


def cmd_store_export(args: argparse.Namespace) -> int:
    # Truncating a file of the store while it is mapped would kill this process (SIGBUS) and
    # empty the store: refused before anything is opened.
    refuse_clobber(args.output, "output", store_files(args.store))
    with using_store(args.store, readonly=True) as store:
        out = Output(args.output, [])
        ok = False
        try:
            if args.tsv:
                for k, v in store.items():
                    out.write(k + b"\t" + v + b"\n")
            else:
                buf: List[bytes] = []
                size = 0
                for v in store.values():
                    buf.append(v)
                    size += len(v)
                    if size >= DEFAULT_BLOCK:
                        out.write(b"".join(buf))
                        buf, size = [], 0
                out.write(b"".join(buf))
            ok = True
        finally:
            finish_outputs(ok, out)
    return EXIT_OK


def cmd_store_get(args: argparse.Namespace) -> int:
    keys = [_store_key(text, args.int) for text in args.keys]
    missing = 0
    with using_store(args.store, readonly=True) as store:
        for text, key in zip(args.keys, keys):
            v = store.get(key)
            if v is None:
                missing += 1
                sys.stderr.write(f"cuckoo store get: {text}: not found\n")
            else:
                write_stdout(v + (b"" if v.endswith(b"\n") else b"\n"))
        write_stdout("", flush=True)
    return EXIT_USAGE if missing else EXIT_OK


def cmd_store_put(args: argparse.Namespace) -> int:
    key = _store_key(args.key, args.int)
    with using_store(args.store) as store:
        store[key] = os.fsencode(args.value)
    return EXIT_OK


def cmd_store_del(args: argparse.Namespace) -> int:
    keys = [_store_key(text, args.int) for text in args.keys]
    missing = 0
    with using_store(args.store) as store:
        for text, key in zip(args.keys, keys):
            if not store.discard(key):
                missing += 1
                sys.stderr.write(f"cuckoo store del: {text}: not found\n")
    return EXIT_USAGE if missing else EXIT_OK


def cmd_store_info(args: argparse.Namespace) -> int:
    with using_store(args.store, readonly=True) as store:
        st = store.stats()
        info = {"path": args.store, "seed": store.seed, "tag_bits": store.tag_bits, **st}
    st = info
    if args.json:
        import json  # imported here: start-up of cuckoo dedup

        write_stdout(json.dumps(info, indent=2) + "\n")
        return EXIT_OK
    write_stdout(f"store {args.store}: {st['live_keys']:,} keys\n")
    write_stdout(f"  log:   {_bytes(st['log_bytes'])} ({_bytes(st['live_bytes'])} live, {_bytes(st['dead_bytes'])} dead: "
                 f"compact() reclaims them)\n")
    write_stdout(f"  index: {_bytes(st['index_bytes'])} ({st['index_bytes_per_key']:.1f} bytes per key), "
                 f"{st['buckets']:,} buckets of 4, load {st['load_factor']:.1%}, {st['tag_bits']}-bit tags\n")
    opened = "from its snapshot" if st["snapshot_used"] else f"from the log ({st['snapshot_note']})"
    write_stdout(f"  opened {opened}; {st['replayed_records']:,} log records replayed\n")
    if st["recovered_bytes"]:
        write_stdout(f"  a torn tail of {st['recovered_bytes']:,} bytes at offset {st['recovered_at']:,} is ignored\n")
    return EXIT_OK


def cmd_store_compact(args: argparse.Namespace) -> int:
    with using_store(args.store) as store:
        before = store.stats()["log_bytes"]
        store.compact()
        after = store.stats()["log_bytes"]
    _note(args, f"cuckoo store compact: {args.store}: {_bytes(before)} -> {_bytes(after)}")
    return EXIT_OK
