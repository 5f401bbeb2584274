"""Writing result files so that a reader never sees half of one.

Every file toposched writes as a result goes through :func:`write_atomic`: it is written
under a temporary name in the same directory, given the usual mode (``0666 & ~umask``;
``mkstemp`` would leave ``0600``, which hides results from colleagues on a shared file
system), then renamed into place. An interrupted run leaves either the old file, the new
one, or a ``.NAME.*.tmp`` file that nothing reads as a result.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


@lru_cache(maxsize=1)
def _umask() -> int:
    """The process's umask. Read from /proc where possible: changing the umask to read it
    would race with other threads (Dask workers run several)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return umask


def file_mode() -> int:
    """The mode a new ordinary file gets under the process's umask."""
    return 0o666 & ~_umask()


def read_parquet(path: str | Path, columns: Sequence[str] | None = None) -> "pa.Table":
    """Columns of a result's Parquet file. Through ``ParquetFile``, not ``pq.read_table``:
    the latter imports ``pyarrow.dataset``, which imports pandas (half a second, in every
    report and snapshot)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as f:
        return f.read(columns=list(columns) if columns is not None else None)


def column_numpy(table: "pa.Table", name: str) -> "np.ndarray":
    """Column ``name`` of ``table`` as a new NumPy array, without pandas (pyarrow's
    ``to_numpy`` imports it: a third of a second in every report process): the one
    conversion of :func:`toposched.startup.column_numpy` (a null in a floating column is
    NaN), copied so that the caller owns it."""
    import numpy as np

    from .startup import column_numpy as numpy_of

    return np.array(numpy_of(table.column(name)))


#: The temporary file :func:`write_atomic` writes beside ``NAME`` (tempfile.mkstemp's
#: eight random characters between): what a killed write leaves, and all that may be
#: removed as such (a user's ``.notes.tmp`` is not one).
_ATOMIC_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def is_atomic_temp(name: str) -> bool:
    """Whether ``name`` is a temporary file of :func:`write_atomic` (``.NAME.XXXXXXXX.tmp``)."""
    return _ATOMIC_TEMP.fullmatch(name) is not None


def write_atomic(path: str | Path, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp_path)`` to produce the file (what it returns is ignored), then move
    it to ``path``."""
    path = Path(path)
    if path.is_dir():
        # os.replace would fail naming the temporary file, not the path given
        raise IsADirectoryError(errno.EISDIR, "is a directory; give a file name", str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def make_parent(path: str | Path) -> None:
    """Create the missing directories above ``path``; one of them being a file is a
    NotADirectoryError naming that file (mkdir says "File exists" of the whole path)."""
    parent = Path(path).absolute().parent
    for p in (parent, *parent.parents):
        if p.exists():
            if not p.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "is a file, not a directory", str(p))
            break
    parent.mkdir(parents=True, exist_ok=True)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


# ------------------------------------------------------------------ result directories

#: The files one run writes (SimResult.write); nothing else lives in a result directory.
RESULT_FILES = ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json")

#: Prefix of the staging directory a run writes into, beside its --out.
STAGING_PREFIX = ".toposched-staging-"


def foreign_entries(out: Path) -> list[str]:
    """Entries of an existing directory that a run did not write (hidden leftovers of an
    interrupted write, ``.NAME.*.tmp``, are not counted)."""
    return sorted(
        e.name for e in out.iterdir() if e.name not in RESULT_FILES and not is_atomic_temp(e.name)
    )


def check_output_dir(out: str | Path, flag: str = "--out") -> Path:
    """Refuse, before any work, an output directory a run could not be written to or
    would clobber: an empty name, an existing file, a path under a file, a directory
    holding other files than a run's results, or a place we may not write. Creates the
    missing parent directories (as the write would)."""
    from .errors import InputError

    text = str(out)
    if text.strip() == "":
        raise InputError(flag, "the output directory is empty; give a directory name, e.g. --out out/run1")
    path = Path(text)
    try:
        return _check_output_dir(path, text, flag)
    except OSError as exc:
        # a name too long, a loop of links, no permission to look: the directory cannot be
        # used, which is bad input (status 2), found before any work
        if exc.errno == errno.ENAMETOOLONG:
            extra = len(_staging_prefix("")) + len("PID-XXXXXXXX")
            why = (
                "the name is too long for the file system (a run first writes beside it, into "
                f".NAME{STAGING_PREFIX}PID-XXXXXXXX, {extra} characters longer)"
            )
        else:
            why = exc.strerror or str(exc)
        raise InputError(text, f"cannot write here: {why}; give {flag} another directory") from None


def refuse_file_out(out: str | Path, command: str) -> None:
    """Refuse, before the log is read, an ``--out`` of compare or frontier that is an
    existing file (found only when the runs' directory was made, after the read)."""
    from .errors import InputError

    if Path(out).exists() and not Path(out).is_dir():
        raise InputError(str(out), f"exists and is not a directory; give --out a new directory or an earlier {command} output")


def _check_output_dir(path: Path, text: str, flag: str) -> Path:
    from .errors import InputError

    resolved = path.resolve()
    if resolved == Path.cwd().resolve() or resolved.parent == resolved or resolved == Path.home().resolve():
        raise InputError(text, f"is the current, home or root directory, which a run cannot replace; give {flag} a subdirectory, e.g. {flag} out/run1")
    if path.exists() and not path.is_dir():
        raise InputError(text, f"exists and is not a directory; give {flag} a new or a result directory")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(text, f"cannot be created: {parent} is a file, not a directory")
            break
    if path.is_dir():
        foreign = foreign_entries(path)
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise InputError(
                text,
                f"holds files that are not results of a run ({shown}); give {flag} a new or empty directory "
                "(a run replaces its directory as a whole)",
            )
    path.absolute().parent.mkdir(parents=True, exist_ok=True)
    # the name replace_dir will stage under, so that a name too long for it fails now, not
    # after the replay
    probe = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(path.name)}{os.getpid()}-", dir=path.absolute().parent))
    probe.rmdir()
    return path


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import ctypes.util

    try:
        # the C library already loaded into this process (no ldconfig run to find it)
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            renameat2 = libc.renameat2
        except (OSError, AttributeError):
            return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), rename_exchange)
    return int(rc) == 0  # renameat2 returns a C int (ctypes gives it untyped)


def replace_dir(out: Path, write: Callable[[Path], None]) -> None:
    """Write a result directory as a whole: ``write(staging)`` fills a new directory beside
    ``out``, which then takes the place of ``out`` in one rename (an atomic exchange with
    the old directory where Linux offers it). Until then the old results stay untouched;
    a kill leaves either them or the new ones, plus a hidden staging directory."""
    import shutil

    out = Path(out)
    if out.exists() and not out.is_dir():
        # before the work: the rename at the end failed naming the hidden staging
        # directory ("Not a directory: '.x.toposched-staging-...' -> 'x'")
        raise NotADirectoryError(errno.ENOTDIR, "is a file, not a directory; give a directory that is new or the command's own", str(out))
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(parent, out.name)
    staging = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(out.name)}{os.getpid()}-", dir=parent))
    try:
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp leaves 0700: results are for colleagues too
        write(staging)
        if out.is_dir() and any(out.iterdir()):
            if not _exchange(staging, out):
                # no atomic exchange: move the old one aside first (a kill in between
                # leaves the old results in the hidden directory, never a mixture)
                old = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(out.name)}{os.getpid()}-", dir=parent))
                os.rmdir(old)
                os.rename(out, old)
                os.rename(staging, out)
                staging = old
        else:
            if out.is_dir():
                out.rmdir()
            os.rename(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _staging_prefix(name: str) -> str:
    """Staging directories of ``name`` are ``.NAME.toposched-staging-PID-XXXXXXXX``."""
    return f".{name}{STAGING_PREFIX}"


def _remove_stale_staging(parent: Path, name: str) -> None:
    """Remove what killed runs into ``name`` left beside it: staging directories whose
    process is gone (a live one belongs to a run still writing)."""
    import re
    import shutil

    pattern = re.compile(re.escape(_staging_prefix(name)) + r"(\d+)-")
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for e in entries:
        m = pattern.match(e.name)
        if not m or not e.is_dir() or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # that process is alive
        except ProcessLookupError:
            shutil.rmtree(e, ignore_errors=True)
        except OSError:
            continue
