"""Argument parsing and ``main``: the subcommands' options, help texts and exit codes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any, NoReturn, Optional, Sequence

import cuckoo
from cuckoo import theory

from cuckoo._dedup.engine import MAX_BLOCK, MAX_THREADS
from cuckoo._dedup.errors import EXIT_CODES

from .common import BUILD_FPR, CliError, DEDUP_FPR, DEFAULT_BLOCK, EXIT_USAGE, EXIT_WRITE
from .demo import cmd_demo
from cuckoo._dedup.estimate import GROWABLE_START
from .filters import cmd_build, cmd_dedup, cmd_info, cmd_query
from .output import _discard_stdout, write_error
from .stores import (
    cmd_store_compact, cmd_store_del, cmd_store_export, cmd_store_get, cmd_store_import, cmd_store_info,
    cmd_store_put,
)


# ---- argument parsing ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors exiting 1 (argparse's own default is 2, our filter-file code)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    # argparse makes a formatter for every add_argument (to check its metavar), and a formatter
    # without a width imports shutil (with zlib, bz2 and lzma) and asks the terminal its size:
    # a few milliseconds of every command's start, on input of any size. The width is the same
    # one (shutil.get_terminal_size's rule), asked once a build_parser().
    _width: Optional[int] = None

    def _get_formatter(self) -> argparse.HelpFormatter:
        if _Parser._width is None:
            _Parser._width = _terminal_columns() - 2  # (argparse's own margin)
        return self.formatter_class(prog=self.prog, width=_Parser._width)


def _terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size() gives it: $COLUMNS when set and
    positive, else the size of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def _positive_int(text: str) -> int:
    try:
        v = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        try:
            v = int(float(text))  # 1e6
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def _bounded(limit: int, what: str):
    """_positive_int, at most `limit` (named `what` in the error)."""
    def parse(text: str) -> int:
        v = _positive_int(text)
        if v > limit:
            raise argparse.ArgumentTypeError(f"at most {what}: {text!r}")
        return v
    return parse


_threads = _bounded(MAX_THREADS, f"{MAX_THREADS:,}")


def _bytes_with_suffix(text: str) -> int:
    """A size in bytes, with an optional K, M or G suffix (powers of 1024), as sort -S takes it."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = units.get(t[-1:], 1)
    try:
        return int(float((t[:-1] if t[-1:] in units else t).replace("_", "").replace(",", "")) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size (bytes, or a number with K, M or G): {text!r}") from None


def _block_size(text: str) -> int:
    """--block-size: bytes (K, M, G suffixes, as --memory takes them), 1 to 1G."""
    v = _bytes_with_suffix(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    if v > MAX_BLOCK:
        raise argparse.ArgumentTypeError(f"at most 1G: {text!r}")
    return v


def _memory_size(text: str) -> int:
    """--memory: bytes (K, M, G suffixes), at least 4K."""
    v = _bytes_with_suffix(text)
    if v < 4096:
        raise argparse.ArgumentTypeError(f"must be at least 4K: {text!r}")
    return v


def _fpr(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive): {text!r}")
    try:
        theory.fingerprint_bits(v)  # (a rate that needs more than 32 bits has no filter)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}: {text!r}") from None
    return v


LINES_HELP = """\
lines: bytes, never decoded. A line ends at \\n; its key is the line without the \\n and
without one \\r before it (so "a\\r\\n" and "a\\n" are the same key, the one b"a" is in Python).
Lines are written back exactly as read; a last line without \\n is a line (it gets a \\n only
when more input follows it); empty lines are keys too. FILE '-' or no FILE reads stdin."""

EXIT_HELP = "exit codes (the same for every command, and for cuckoo.dedup's errors):\n" + "\n".join(
    f"  {code}  {text}" for code, text in EXIT_CODES)

# The default dedup filter's fingerprint width, from the core's sizing rule (cuckoo.theory).
_DEDUP_BITS = theory.fingerprint_bits(DEDUP_FPR)

DEDUP_EPILOG = f"""\
Writes each line the first time it is seen, in input order. Exact by default: every repeat is
compared with the line itself, as awk '!seen[$0]++', sort -u, DuckDB and pandas do, so no line
is ever dropped by mistake.

approximate (--approx, or any of --fpr, --capacity, --filter, --save, --seed): a cuckoo filter
remembers the keys as short fingerprints ({_DEDUP_BITS} bits at the default --fpr, about
{_DEDUP_BITS / theory.design_load(4):.0f} bits per line of capacity), so memory stays small however long the lines are, and
the filter can be saved and shipped; the price is that a new line whose fingerprint collides
with a stored one is dropped by mistake (reported at the end as the expected number).

progress (lines, lines/s) is shown on stderr when stderr is a terminal; --progress forces it,
--quiet turns it and the final report off.

capacity: --capacity N fixes the filter size (exit 3 if more than about N distinct lines arrive:
the lines before the failing one are written, --save saves the filter holding exactly them, and
stderr names the line N: resume with tail -n +N and --filter that file, which then grows).
Without it the filter grows, starting from an estimate of the distinct
lines x 1.2: counted for files of up to 1 MiB and stdin of up to two blocks, estimated from 16
sampled windows of larger files, {GROWABLE_START:,} for longer pipes.

seed: new filters get a secret random seed (stored in the --save file), so that input crafted
against the public hash behaves like any other; --seed N makes the filter file reproducible.

report (stderr, unless --quiet): lines read, written, dropped (records with --csv, --jsonl or
-t, where a record may span lines), and the expected number of unique lines wrongly dropped:
each kept line was tested against the filter, which answers "seen" falsely with probability
about its expected_fpr at that moment (it rises with the load).
The figure sums, per block, (lines kept) x (mean of expected_fpr before and after the block).

{LINES_HELP}

{EXIT_HELP}

examples:
  cuckoo dedup big.txt -o unique.txt
  cuckoo dedup --csv -k event_id events.csv -o unique.csv
  zcat logs/*.gz | cuckoo dedup --approx --capacity 200000000 | wc -l
  cuckoo dedup today.txt --filter seen.cuckoo --save seen.cuckoo > new.txt   (day one too)"""


def _add_input_options(p: argparse.ArgumentParser, progress: bool = True) -> None:
    p.add_argument("files", nargs="*", metavar="FILE", help="input files ('-' or none: stdin)")
    if progress:
        p.add_argument("--progress", action="store_true",
                       help="show progress (lines, lines/s) on stderr even when it is not a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no report on stderr")
    p.add_argument("--block-size", type=_block_size, default=DEFAULT_BLOCK, metavar="BYTES",
                   help=f"read input in blocks of at most this many bytes (K, M, G suffixes; default "
                        f"{DEFAULT_BLOCK >> 20} MiB; "
                        "the filter path with threads reads about 16,384 lines a block, 256 KiB and more)")


STORE_EPILOG = """\
A store is an exact key-value file: an append-only log of records (locked by its one writer)
and, beside it, STORE.idx (a snapshot of the in-memory index, written on close).

  cuckoo store import data.store big.txt       each line becomes a record (key: its number)
  cuckoo store export data.store -o copy.txt   ... and comes back byte for byte
  cuckoo store import kv.store --tsv pairs.tsv KEY<TAB>VALUE lines
  cuckoo store get kv.store alice bob          values, one per line (exit 1 if one is missing)
  cuckoo store put kv.store alice admin
  cuckoo store del kv.store bob
  cuckoo store info kv.store                   keys, log and index sizes, dead bytes
  cuckoo store compact kv.store                rewrite the log without dead records

exit codes: 0 ok, 1 usage error or a key not found, 2 a store that cannot be opened (locked,
corrupt, unreadable), 4 the output cannot be written (e.g. a full disk)."""


def _add_store_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="an exact key-value store file: import, export, get, put, del, info, compact",
                       description="Exact key-value store files (cuckoo.Store) on the command line.",
                       epilog=STORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ops = p.add_subparsers(dest="store_command", metavar="OPERATION", parser_class=_Parser, required=True)

    q = ops.add_parser("import", help="add the lines of FILEs as records")
    q.add_argument("store", metavar="STORE")
    _add_input_options(q, progress=False)
    q.add_argument("--tsv", action="store_true", help="lines are KEY<TAB>VALUE (default: key = line number)")
    q.set_defaults(_parser=q, func=cmd_store_import)

    q = ops.add_parser("export", help="write the values (or --tsv, KEY<TAB>VALUE lines) in log order")
    q.add_argument("store", metavar="STORE")
    q.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    q.add_argument("--tsv", action="store_true", help="write KEY<TAB>VALUE lines")
    q.set_defaults(_parser=q, func=cmd_store_export)

    for name, fn, what in (("get", cmd_store_get, "print the values of KEYs"),
                           ("del", cmd_store_del, "delete KEYs")):
        q = ops.add_parser(name, help=what)
        q.add_argument("store", metavar="STORE")
        q.add_argument("keys", nargs="+", metavar="KEY")
        q.add_argument("--int", action="store_true", help="KEYs are integers (e.g. the line numbers of import)")
        q.set_defaults(_parser=q, func=fn)

    q = ops.add_parser("put", help="store VALUE under KEY")
    q.add_argument("store", metavar="STORE")
    q.add_argument("key", metavar="KEY")
    q.add_argument("value", metavar="VALUE")
    q.add_argument("--int", action="store_true", help="KEY is an integer")
    q.set_defaults(_parser=q, func=cmd_store_put)

    q = ops.add_parser("info", help="keys, log and index sizes")
    q.add_argument("store", metavar="STORE")
    q.add_argument("--json", action="store_true", help="print a JSON object")
    q.set_defaults(_parser=q, func=cmd_store_info)

    q = ops.add_parser("compact", help="rewrite the log with only live records (atomic)")
    q.add_argument("store", metavar="STORE")
    q.add_argument("-q", "--quiet", action="store_true", help="no report on stderr")
    q.set_defaults(_parser=q, func=cmd_store_compact)


def _int_in(text: str, lo: int, hi: int, what: str, base: int = 10) -> int:
    try:
        v = int(text, base)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"must be {what}: {text!r}")
    return v


def _seed(text: str) -> int:
    return _int_in(text, 0, 2**64 - 1, "between 0 and 2**64 - 1", base=0)


def _add_seed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_seed, metavar="N",
                   help="seed of the key hash of a new filter, for reproducible filter files (default: a "
                        "secret random seed, stored in the file, so that input crafted against the public "
                        "hash cannot make lines collide)")


def _expansion(text: str) -> int:
    return _int_in(text, 1, 4, "1, 2, 3 or 4")


def _add_expansion_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expansion", type=_expansion, metavar="N",
                   help="growth factor of each new stage of a growable filter, 1..4 (default 2; 4: fewer, "
                        "larger stages, FPR bound 4/3 x the first stage's; 1: stages of the first's size, the "
                        "bound growing with each); with --capacity the filter starts there and grows")


def build_parser() -> argparse.ArgumentParser:
    _Parser._width = None  # (the terminal's width is asked again: it may have changed)
    parser = _Parser(
        prog="cuckoo",
        description="Cuckoo filters on the command line: streaming dedup of huge files in little memory,\n"
                    "filter files you build once and query later.",
        epilog="Run 'cuckoo COMMAND --help' for each command. Start with: cuckoo demo\n\n" + EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cuckoo {cuckoo.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("dedup", help="write each line the first time it is seen (streaming, bounded memory)",
                       description="Streaming, order-preserving dedup of lines: like awk '!seen[$0]++'\n"
                                   "in a fraction of the memory.",
                       epilog=DEDUP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write kept lines to OUT (default stdout)")
    p.add_argument("--capacity", type=_positive_int, metavar="N",
                   help="size the filter for N distinct lines (fixed: exit 3 when full)")
    p.add_argument("--fpr", type=_fpr, metavar="P",
                   help=f"target false-positive rate at capacity (default {DEDUP_FPR:g}): the chance that a "
                        f"new line is dropped, at most")
    p.add_argument("--save", metavar="FILTER", help="save the filter to FILTER at the end")
    p.add_argument("--filter", metavar="FILTER",
                   help="start from a saved filter: lines already in it count as seen (dedup against yesterday); "
                        "it grows when it fills")
    p.add_argument("--exact", action="store_true",
                   help="the default: never drop a new line: compare every repeat with the line itself. "
                        "Regular files: the distinct lines are kept in memory, at most --memory of them; "
                        "more take one more pass over the input per half of them set aside. Pipes and "
                        "compressed input: past --memory, kept in an anonymous temporary file (memory ~12 "
                        "bytes per distinct line)")
    p.add_argument("--approx", action="store_true",
                   help="approximate: remember the lines in a cuckoo filter (about 2 bytes a distinct line "
                        "at the default --fpr, against 12 or more for --exact); a new line is dropped by "
                        "mistake with probability at most --fpr. Implied by --fpr, --capacity, --filter, "
                        "--save and --seed")
    p.add_argument("--memory", type=_memory_size, metavar="SIZE",
                   help="with --exact: memory for the distinct lines and their index (K, M, G suffixes; "
                        "default: for files, a quarter of their size, at least 128M, at most the default for "
                        "pipes and compressed input: 1/16 of the machine's memory, 256M to 4G); "
                        "less means more passes over the input, never another output")
    p.add_argument("--store", metavar="STORE",
                   help="exact dedup against a persistent store (created if absent): lines already in it "
                        "count as seen, new lines are added to it once written. A run stopped anyhow (kill, "
                        "Ctrl-C, full disk) and rerun as the same command writes every line exactly once "
                        "into -o/--dropped files, compressed ones too (a journal, STORE.run, says where to go "
                        "on), at least once to stdout or from stdin, pipes and compressed files (only the block in flight may "
                        "repeat); a rerun of a finished run changes nothing. Lines longer than 2**31 - 1 "
                        "bytes are refused (exit 1)")
    p.add_argument("--threads", type=_threads, metavar="N",
                   help="threads of the native pipeline (default: the cores available); the output never "
                        "depends on it")
    counts = p.add_argument_group("counts (exact, two passes)")
    counts.add_argument("-c", "--count", action="store_true",
                        help="write each kept record with the number of records of its key in the whole input: "
                             "a line as uniq -c writes it, a CSV or -t record with one more field (CSV: a header "
                             "column), a JSON object with one more member. These options read the input twice "
                             "(a pipe or compressed input is first copied to a temporary file)")
    counts.add_argument("--count-name", metavar="NAME", default="count",
                        help="the CSV column and JSON member that --count adds (default: count)")
    counts.add_argument("-d", "--repeated", action="store_true",
                        help="write only keys that occur more than once (each once)")
    counts.add_argument("-u", "--unique-only", action="store_true",
                        help="write only keys that occur exactly once")
    counts.add_argument("--keep", choices=["first", "last"], default="first",
                        help="write each key's first record (default) or its last one, in input order "
                             "(the rows of pandas drop_duplicates(keep='last'))")
    p.add_argument("--window", metavar="N|DURATION",
                   help="drop a record only when its key occurred among the previous N records, or less than "
                        "DURATION ago in arrival time (500ms, 30s, 10m, 24h, 7d: tail -f log | cuckoo dedup "
                        "--window 10m); memory is bounded by the keys of about one window. Exact; --approx "
                        "(or --fpr) keeps filters instead")
    p.add_argument("--time-key", metavar="FIELD",
                   help="with --window DURATION and keyed records (--csv, --jsonl, -t): the field holding each "
                        "record's event time (epoch seconds, or ISO 8601 such as 2026-11-29T10:00:00Z); a "
                        "record is dropped when its key occurred less than DURATION apart in event time. Late "
                        "records (behind the largest time seen by more than DURATION) and records without a "
                        "time are kept and counted")
    p.add_argument("-z", "--zero-terminated", action="store_true",
                   help="records end at a NUL byte, not a newline, as in sort -z and uniq -z "
                        "(find -print0 | cuckoo dedup -z); a record's key is the record without its NUL")
    _add_seed_option(p)
    _add_expansion_option(p)
    records = p.add_argument_group(
        "keyed records (the key is a field; the whole record is written)",
        "Compressed input (gzip, bzip2, xz, zstd) is recognised by its first bytes, whatever its name; "
        "-o NAME.gz|.bz2|.xz|.zst compresses the output. A Parquet or Arrow IPC file is deduplicated by "
        "its column -k COL (needs pyarrow), -o in the same format.")
    records.add_argument("-t", "--field-separator", dest="sep", metavar="SEP",
                         help="fields separated by the byte SEP ('\\t' for a tab), as in sort and cut")
    records.add_argument("-k", "--key", metavar="KEY",
                         help="the key: field N or fields N,M (from 1) with -t; a column name or number with "
                              "--csv; a dotted path with --jsonl; a column of a Parquet/Arrow file")
    records.add_argument("--csv", action="store_true",
                         help="RFC 4180 CSV records (quoted fields may hold separators and newlines); the "
                              "header is written and is no record")
    records.add_argument("--jsonl", action="store_true",
                         help="JSON Lines; the key is the JSON text of the value at -k a.b.c, so 1 and \"1\" differ")
    records.add_argument("--missing", choices=["keep", "drop", "error"], default="error",
                         help="a record without the key field: write it, drop it, or stop with an error naming "
                              "its line (default)")
    records.add_argument("--dropped", metavar="FILE",
                         help="write the dropped records to FILE, in input order, exactly as read")
    p.set_defaults(_parser=p, func=cmd_dedup)

    p = sub.add_parser("build", help="build a filter file from the lines of FILEs",
                       description="Build a filter of the lines of FILEs (one key per distinct line) and save it.",
                       epilog=LINES_HELP + "\n\n" + EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_options(p)
    p.add_argument("-o", "--output", metavar="FILTER", required=True, help="filter file to write")
    p.add_argument("--capacity", type=_positive_int, metavar="N",
                   help="size the filter for N keys (default: estimated from the input, or growable)")
    p.add_argument("--fpr", type=_fpr, metavar="P", help=f"target false-positive rate (default {BUILD_FPR:g})")
    p.add_argument("--multiset", action="store_true",
                   help="add every line, duplicates too (query --count then counts them, up to "
                        "2 x bucket_size copies of one key); default: each distinct line once")
    _add_seed_option(p)
    _add_expansion_option(p)
    p.set_defaults(_parser=p, func=cmd_build, filter=None)

    p = sub.add_parser("query", help="print the lines that may be in a filter (or, --absent, the others)",
                       description="Print the lines of FILEs that may be in FILTER (false positives possible,\n"
                                   "false negatives never).",
                       epilog=LINES_HELP + "\n\n" + EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("filter", metavar="FILTER", help="a filter file (from build or dedup --save)")
    _add_input_options(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--absent", action="store_true", help="print the lines certainly not in the filter")
    mode.add_argument("--count", action="store_true",
                      help="print every line as 'COUNT<TAB>line': the copies of its fingerprint found")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    p.add_argument("-v", "--verbose", action="store_true", help="print a summary on stderr")
    p.set_defaults(_parser=p, func=cmd_query)

    p = sub.add_parser("info", help="describe a filter file: parameters, load, memory, expected FPR",
                       description="Describe a filter file.", epilog=EXIT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("filter", metavar="FILTER", help="a filter file")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.add_argument("--verify", action="store_true",
                   help="also read the whole file and check every table's checksum and item count "
                        "(default: only the header, instant at any size)")
    p.set_defaults(_parser=p, func=cmd_info)

    p = sub.add_parser("demo", help="a short tour on generated data: speed, memory vs set, FPR vs theory",
                       description="Build a filter of SIZE random keys, look them up, measure false positives "
                                   "against theory and memory against a Python set, then dedup a generated "
                                   "text stream. Everything is generated in memory; nothing is written.")
    p.add_argument("--size", type=_positive_int, default=4_000_000, metavar="N",
                   help="number of keys (default 4,000,000)")
    p.add_argument("--fpr", type=_fpr, default=BUILD_FPR, metavar="P", help=f"target FPR (default {BUILD_FPR:g})")
    p.add_argument("--seed", type=int, default=2014, help="random seed (default 2014)")
    p.add_argument("--set-sample", type=_positive_int, default=1_000_000, metavar="N",
                   help="measure the Python set on at most N keys and scale (default 1,000,000)")
    p.set_defaults(_parser=p, func=cmd_demo)

    _add_store_parser(sub)
    return parser


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (raised by _terminate, where the interpreter runs its handlers)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated(signum)


def keep_freed_arrow_memory() -> None:
    """Asks pyarrow's allocator (mimalloc, loaded with pyarrow, which reads this at load) to keep
    the memory it frees for reuse instead of handing it back to the OS after 10 ms: a Parquet
    dedup frees and allocates each batch's buffers, and every page handed back is faulted in and
    zeroed again by the kernel at its next use: on the KVM guests measured, 0.8-1.4 s of system
    time in runs of 1.7-2.2 s, against 0.3-0.5 s with this (3*10^6 rows of
    benchmarks/dedup_records.py, Zen 4, 2026-12-02; peak RSS 393 -> 462 MiB). For a command-line
    run only (a short process), and only where the user set nothing."""
    os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")


def main(argv: Optional[Sequence[str]] = None) -> int:
    if argv is None:  # a real run: pyarrow is not loaded yet (nothing imported it)
        keep_freed_arrow_memory()
    parser = build_parser()
    # parse_known_args, then file names found after options (`dedup a.txt -o out b.txt`,
    # `query F --absent a.txt`): argparse alone stops filling a '*' positional at the first option.
    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = getattr(args, "_parser", parser)
        files = getattr(args, "files", None)
        options = [e for e in extra if e.startswith("-") and e != "-"]
        if files is None or options:
            sub.error("unrecognized arguments: " + " ".join(options or extra))
        files.extend(e for e in extra if e != "--")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if hasattr(signal, "SIGPIPE") and argv is None:
        # Behave like other filters in a pipe (`cuckoo dedup big | head`): end quietly.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if argv is None:
        # SIGTERM and SIGHUP (kill, a closed terminal) stop a run as Ctrl-C does: through the
        # code's cleanup, so that an output file written whole is removed, not left half done.
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), _terminate)
    try:
        code = int(args.func(args))
        try:  # text written to stdout (info, demo) may still sit in its buffer
            sys.stdout.flush()
        except OSError as exc:
            raise write_error("to standard output", exc) from None
        return code
    except CliError as exc:
        if str(exc):  # (a closed stdout pipe ends quietly, as other filters in a pipe do)
            sys.stderr.write(str(exc) + "\n")
        if exc.code == EXIT_WRITE and argv is None:  # a real run: the process ends next
            _discard_stdout()
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("cuckoo: interrupted\n")
        return 130
    except _Terminated as exc:
        sys.stderr.write(f"cuckoo: terminated by {signal.Signals(exc.signum).name}\n")
        return 128 + exc.signum
