"""Coverage-guided fuzzing of reading Arrow IPC input for dedup (atheris).

    python fuzz/fuzz_arrow_ipc.py /tmp/new fuzz/corpus/arrow_ipc -max_total_time=60

An input is the bytes of an Arrow IPC file (``ARROW1``) or stream. Whatever the bytes,
cuckoo._dedup.columnar.dedup_columnar either dedups the file by its column ``k`` (exactly, against an
anonymous store) or raises ValueError (naming the file) or KeyError / TypeError (no usable ``k``
column): a crash, a sanitizer report or any other exception is a finding. A corrupt IPC file used
to crash the interpreter (a buffer offset past the file's end: SIGBUS; bad string offsets:
SIGSEGV) before every batch was validated. fuzz/make_corpus.py writes the seed corpus (small
valid files and streams of several column types).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["cuckoo"]):
    import cuckoo  # noqa: F401
    from cuckoo._dedup import columnar as _columnar

# libFuzzer ends the process with exit(): give it a folder that the caller removes (CI sets
# CUCKOO_FUZZ_TMP to its scratch folder), else one under the system temp.
WORK = tempfile.mkdtemp(prefix="cuckoo-fuzz-arrow-", dir=os.environ.get("CUCKOO_FUZZ_TMP"))
ALLOWED = (ValueError, KeyError, TypeError)


@atheris.instrument_func
def test_one_input(data: bytes) -> None:
    # The suffix does not matter for reading (the format comes from the magic bytes); the output
    # is written in the input's format.
    src = os.path.join(WORK, "in.arrow")
    with open(src, "wb") as fh:
        fh.write(data)
    try:
        r = _columnar.dedup_columnar(src, os.path.join(WORK, "out"), "k", exact=True, missing="keep")
    except ValueError as exc:
        if len(data) >= 8 and src not in str(exc):
            raise AssertionError(f"the error does not name the file: {exc}") from None
        return
    except (KeyError, TypeError):
        return
    assert 0 <= r.rows_kept <= r.rows_read


def main() -> None:
    try:
        atheris.Setup(sys.argv, test_one_input)
        atheris.Fuzz()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
