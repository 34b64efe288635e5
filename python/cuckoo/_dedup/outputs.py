"""The main job's files: outputs written whole, and the one clobber rule.

**Outputs are whole.** Without a store, an output file (``-o``, ``--dropped``, a path given to
``cuckoo.dedup``) is written to a temporary file beside its target and renamed over it only when
the run succeeds: a run that fails or is interrupted leaves an existing target as it was, a new
one does not appear, and no temporary file is left behind. (On Linux the temporary file has no
name until it is renamed, where the file system allows; elsewhere a SIGKILL leaves a named one,
``.NAME.PID.*.cuckoo-tmp``, which the next run writing NAME removes.) With a store (``--store``), outputs
are written in place, since the store records a line once its output was handed to the OS: a
rerun then writes every line no run wrote (at least once; exactly once with the run journal of
cuckoo._dedup.resume, which cuts the output back to the last commit).

**One clobber rule.** No file a run writes may be a file it reads or another file it writes: the
inputs, the outputs, the filter file read or saved, a store and its files are compared by file
identity (device and inode, so symlinks and hard links count; by resolved path for a file that
does not exist yet). Such a run is refused with one line before anything is opened or written.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Any, List, Optional, Sequence, Tuple

from .errors import EXIT_USAGE, ReportedError


class ClobberError(ReportedError, ValueError):
    """A run that would overwrite one of its own files (exit code 1). A ValueError for the API."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


def same_file(a: str, b: str) -> bool:
    """Whether paths a and b name one file: by identity (device and inode, so symlinks and hard
    links count) when both exist, else by their resolved paths (a file about to be created)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        try:
            return os.path.realpath(a) == os.path.realpath(b)
        except (OSError, ValueError):
            return False


def store_files(path: str) -> List[Tuple[str, str]]:
    """(path, what) of each file a store at `path` owns: its log, index snapshot (and the
    snapshot's temporary file), lock, compaction's temporary log, and the run journal of dedup
    (cuckoo._dedup.resume)."""
    return [(path, f"the store '{path}'"), (path + ".idx", f"the snapshot of the store '{path}'"),
            (path + ".idx.tmp", f"a temporary file of the store '{path}'"),
            (path + ".lock", f"the lock of the store '{path}'"),
            (path + ".compact", f"a temporary file of the store '{path}'"),
            (path + ".run", f"the run journal of the store '{path}'")]


def refuse_clobber(path: Optional[str], what: str, protected: Sequence[Tuple[str, str]],
                   refusal: str = "refusing to overwrite it", prefix: str = "cuckoo") -> None:
    """ClobberError when `path` (a file this run writes, or reads while it writes `protected`) is
    one of the `protected` files. Called before anything is opened or written."""
    if path is None or path == "-":
        return
    for other, role in protected:
        if other is not None and other != "-" and same_file(path, other):
            raise ClobberError(f"{prefix}: {what} '{path}' is also {role}: {refusal}")


def check_run_files(inputs: Sequence[str], writes: Sequence[Tuple[Optional[str], str]],
                    reads: Sequence[Tuple[Optional[str], str]] = (), prefix: str = "cuckoo") -> None:
    """The clobber rule over a whole run: each file written (`writes`: (path, what), None for
    none or stdout) against the inputs, the other files read (`reads`) and every other file
    written."""
    protected: List[Tuple[str, str]] = [(p, "an input") for p in inputs if p is not None]
    protected += [(p, what) for p, what in reads if p is not None]
    for k, (path, what) in enumerate(writes):
        if path is None:
            continue
        others = [(p, f"the {w}") for j, (p, w) in enumerate(writes) if j != k and p is not None]
        refuse_clobber(path, what, protected + others, prefix=prefix)


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Removes `.BASE.PID.*.cuckoo-tmp` files in `directory` whose process is gone: what a run
    killed by SIGKILL (or a power loss) left behind while it wrote BASE. A PID alive now (the
    writer still running, or the PID reused) keeps its file. Errors are ignored: a temporary file
    that cannot be removed changes nothing of this run."""
    prefix = f".{base}."
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".cuckoo-tmp")]
    except OSError:
        return
    for name in names:
        pid_text = name[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue  # alive (or another user's: PermissionError below)
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _new_temporary(directory: str, base: str) -> "tuple[int, str]":
    """A new file `.BASE.PID.RANDOM.cuckoo-tmp` in `directory`, opened for writing (mode 0600):
    (fd, path). Made here rather than by tempfile, which imports shutil and costs every run of
    the command its start-up. Those of killed runs are removed first."""
    _remove_stale_temporaries(directory, base)
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{os.getpid()}.{os.urandom(6).hex()}.cuckoo-tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


_UNNAMED: dict = {}  # st_dev -> whether an O_TMPFILE file there can be given a name


def _unnamed_files_work(directory: str) -> bool:
    """Whether the file system of `directory` makes O_TMPFILE files and links them into place
    (tried once per device: some kernels and sandboxes refuse one or the other)."""
    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return False
    if dev not in _UNNAMED:
        ok = False
        try:
            fd = os.open(directory, getattr(os, "O_TMPFILE") | os.O_WRONLY | os.O_CLOEXEC, 0o600)
            try:
                name = os.path.join(directory, f".cuckoo-probe.{os.getpid()}.cuckoo-tmp")
                os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
                os.unlink(name)
                ok = True
            finally:
                os.close(fd)
        except (AttributeError, OSError):
            ok = False
        _UNNAMED[dev] = ok
    return _UNNAMED[dev]


class OutputFile:
    """A binary output file: written whole (`atomic`: a temporary file beside the target, renamed
    over it by commit(), removed by abort()) or in place. NAME.gz/.bz2/.xz/.zst is compressed."""

    def __init__(self, path: Any, atomic: bool = True, resume_at: Optional[int] = None) -> None:
        """`resume_at` (in place): keep the file's first `resume_at` bytes and write after them (a
        --store run resumed from its journal, cuckoo._dedup.resume; a compressed file is cut
        where a member ended, and a new member follows)."""
        from . import compress  # (here: start-up of cuckoo dedup)

        self.path = os.fspath(path)
        self.tmp: Optional[str] = None
        fmt = compress.suffix_format(self.path)
        if fmt == "zstd":
            compress._zstd()  # the missing-package hint before any file is created
        # Only a regular file (or a new one) is replaced: a device (/dev/null, /dev/full), a FIFO
        # or a terminal is written in place, and through a symlink the file it names is replaced.
        target = os.path.realpath(self.path)
        try:
            atomic = atomic and stat.S_ISREG(os.stat(target).st_mode)
        except FileNotFoundError:
            pass
        except OSError:
            atomic = False
        raw: Optional[IO[bytes]] = None
        self.unnamed = False  # an O_TMPFILE file: it gets a name only at commit
        self.target = target
        if atomic:
            directory = os.path.dirname(target)
            try:
                # Linux: a file without a name in the target's directory, so that not even a
                # SIGKILL leaves a temporary file behind (where the kernel can name it later: not
                # every sandbox can); elsewhere a named one, removed on failure.
                if not _unnamed_files_work(directory):
                    raise OSError("no O_TMPFILE")
                fd = os.open(directory, getattr(os, "O_TMPFILE") | os.O_WRONLY | os.O_CLOEXEC, 0o600)
                self.unnamed = True
                self.tmp = ""
            except (AttributeError, OSError):
                try:
                    fd, self.tmp = _new_temporary(directory, os.path.basename(target))
                except PermissionError:  # a directory this process cannot create files in: in place
                    fd, self.tmp = -1, None
            if fd >= 0:
                raw = os.fdopen(fd, "wb")
        if raw is None and resume_at is not None:  # (a compressed one: cut at a member's end, a new one follows)
            assert not atomic, "a resumed output is written in place"
            raw = open(self.path, "r+b")
            raw.truncate(resume_at)
            raw.seek(resume_at)
        if raw is None:
            raw = open(self.path, "wb")
        self.raw = raw
        self.fh: Any = compress.open_output(self.path, raw, appending=bool(resume_at))
        self.done = False

    def write(self, data: Any) -> Any:
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()

    def fileno(self) -> int:
        return self.fh.fileno()

    def commit(self) -> None:
        """Closes the file (a compressed one: its last member or frame) and, when atomic, puts it
        in place of the target with the mode a new file would get (or the target's own)."""
        if self.done:
            return
        self.done = True
        try:
            if self.fh is not self.raw:
                self.fh.close()  # (a CompressingWriter over raw: flushes its end into raw)
            if self.unnamed:  # a name for it beside the target (then renamed over it)
                self.raw.flush()
                name = os.path.join(os.path.dirname(self.target),
                                    f".{os.path.basename(self.target)}.{os.getpid()}.{id(self):x}.cuckoo-tmp")
                os.link(f"/proc/self/fd/{self.raw.fileno()}", name, follow_symlinks=True)
                self.tmp = name
            self.raw.close()
            if self.tmp is not None:
                try:
                    mode = os.stat(self.target).st_mode & 0o7777
                except OSError:
                    umask = os.umask(0)
                    os.umask(umask)
                    mode = 0o666 & ~umask
                os.chmod(self.tmp, mode)
                os.replace(self.tmp, self.target)
                self.tmp = None
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Closes and removes the temporary file (the target stays as it was). Never raises."""
        self.done = True
        for fh in (self.fh, self.raw):
            try:
                # (a compressed one: its threads stopped without finishing what the file is not
                # going to keep)
                (fh.abort if hasattr(fh, "abort") else fh.close)()
            except BaseException:  # (a compressor's error on the way out: the file goes anyway)
                pass
        if self.tmp:  # (an unnamed file has no name to remove: closing it was enough)
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
        self.tmp = None

    def close(self) -> None:
        self.commit()
