"""dedup's record options: -t/-k, --csv, --jsonl, --missing, --dropped, and Parquet / Arrow IPC
inputs (cuckoo._dedup.records, cuckoo._dedup.columnar)."""

from __future__ import annotations

import argparse
import os
import stat
import time
from typing import Any, List, Optional

from cuckoo._dedup.columnar import ARROW_HINT, sniff_columnar
from cuckoo._dedup.records import framing_of

from .common import CliError, EXIT_OK, EXIT_USAGE, _one_line
from cuckoo._dedup.sources import Source
from .output import Output, _note, _si, inputs_of, refuse_clobber


def framing_from_args(args: argparse.Namespace) -> Optional[Any]:
    """The framing of -t/-k/--csv/--jsonl/--missing (None: whole lines), or a one-line usage error."""
    try:
        return framing_of(sep=args.sep, key=args.key, csv=args.csv, jsonl=args.jsonl, missing=args.missing,
                          zero_terminated=args.zero_terminated)
    except ValueError as exc:
        raise CliError(f"cuckoo dedup: {_one_line(exc)}", EXIT_USAGE) from None


def dropped_sink(args: argparse.Namespace, sources: List[Source], resume_at: Optional[int] = None) -> Optional[Output]:
    """--dropped FILE as an output (never an input nor -o's file), or None."""
    if not args.dropped:
        return None
    refuse_clobber(args.dropped, "--dropped file", [(args.output, "the output")])  # (by identity: links too)
    return Output(args.dropped, sources, atomic=not args.store, resume_at=resume_at)


def record_error(exc: ValueError) -> CliError:
    """A record without its key field (--missing error), invalid CSV/JSON: one line, exit 1."""
    return CliError(f"cuckoo dedup: {_one_line(exc)}", EXIT_USAGE)


def columnar_input(args: argparse.Namespace) -> Optional[str]:
    """The format of a single Parquet or Arrow IPC input file, else None."""
    if len(args.files) != 1 or args.files[0] == "-" or args.csv or args.jsonl or args.sep is not None:
        return None  # (a text framing asked for reads the file as text, whatever its first bytes)
    try:
        if not stat.S_ISREG(os.stat(args.files[0]).st_mode):
            return None  # a pipe: reading it here would take its first bytes away
        with open(args.files[0], "rb") as fh:
            return sniff_columnar(fh.read(8))
    except OSError:
        return None


def cmd_dedup_columnar(args: argparse.Namespace) -> int:
    """dedup of a Parquet or Arrow IPC file by a column, row group by row group."""
    src = args.files[0]
    for opt, what in (("sep", "-t"), ("csv", "--csv"), ("jsonl", "--jsonl"), ("store", "--store"),
                      ("filter", "--filter"), ("save", "--save"), ("zero_terminated", "-z"), ("count", "--count"),
                      ("repeated", "--repeated"), ("unique_only", "--unique-only")):
        if getattr(args, opt, None):
            raise CliError(f"cuckoo dedup: {what} is not for a Parquet or Arrow file (dedup it by a column: -k COL, "
                           f"--exact or the filter)", EXIT_USAGE)
    if args.keep == "last":
        raise CliError("cuckoo dedup: --keep last is not for a Parquet or Arrow file", EXIT_USAGE)
    if args.key is None:
        raise CliError(f"cuckoo dedup: {src} is a Parquet/Arrow file: say which column is the key with -k COL",
                       EXIT_USAGE)
    if not args.output or args.output == "-":
        raise CliError("cuckoo dedup: a Parquet/Arrow file is written to a file: give -o OUT", EXIT_USAGE)
    inputs = [(src, "an input")]
    refuse_clobber(args.output, "output", inputs)
    if args.dropped:
        refuse_clobber(args.dropped, "--dropped file", inputs)
    if args.exact and (args.capacity is not None or args.fpr is not None or args.seed is not None):
        raise CliError("cuckoo dedup: --capacity/--fpr/--seed are for the filter; --exact keeps every key exactly",
                       EXIT_USAGE)
    from cuckoo._dedup.columnar import dedup_columnar

    start = time.perf_counter()
    try:
        r = dedup_columnar(src, args.output, args.key, exact=args.exact, fpr=args.fpr, capacity=args.capacity,
                           seed=args.seed, dropped=args.dropped, missing=args.missing)
    except ImportError:
        raise CliError(f"cuckoo dedup: {ARROW_HINT}", EXIT_USAGE) from None
    except (KeyError, TypeError, ValueError, OSError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise CliError(f"cuckoo dedup: {_one_line(text if isinstance(text, BaseException) else ValueError(text))}",
                       EXIT_USAGE) from None
    seconds = time.perf_counter() - start
    _note(args, f"cuckoo dedup: {r.rows_read:,} rows read in {r.batches:,} batches, {r.rows_kept:,} "
                f"written, {r.rows_dropped:,} dropped in {seconds:.2f} s "
                f"({_si(r.rows_read / max(seconds, 1e-9))} rows/s)" + (" (exact)" if args.exact else ""))
    return EXIT_OK
