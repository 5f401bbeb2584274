"""Start-up costs of a command: what not to import.

pyarrow asks its pandas shim, at the first ``pa.array``, ``to_numpy`` or ``to_pylist``,
whether pandas is there, and that imports pandas (0.2 to 0.3 s here: longer than a whole
replay of a small log) even though no pandas object is ever in sight. A command that
makes no DataFrame lets the shim's first look fail instead: pyarrow then treats every
value as not-pandas. The shim imports pandas for real the first time something asks for
it explicitly (``Table.to_pandas``), so nothing is lost.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: importing them is what this module avoids
    import numpy as np
    import pyarrow as pa


def keep_pandas_unloaded() -> None:
    """Let pyarrow's first look for pandas find nothing (once per process; a no-op when
    pandas is already imported or pyarrow changes its private shim)."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    shim = getattr(getattr(pa, "lib", None), "_pandas_api", None)
    if shim is None:
        return
    sys.meta_path.insert(0, _NoPandas)  # "import pandas" raises ImportError, this once
    try:
        shim.have_pandas  # the shim's first look: it records "no pandas"
    finally:
        sys.meta_path.remove(_NoPandas)


class _NoPandas:
    """An import finder that refuses pandas."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not imported by this command", name=name)
        return None


#: glibc's mallopt parameters (malloc.h) and what a replay sets them to.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap, where a freed one is used again (glibc's
#: largest allowed value: 32 MiB on 64-bit machines).
MMAP_THRESHOLD_BYTES = 32 << 20
#: Free memory the heap keeps before giving it back to the system.
TRIM_THRESHOLD_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep the memory a replay frees, for the next allocation.

    A replay makes and drops column after column of a few MB each (the log's fields, the
    normalized columns, the engine's results, the result files' pages). Under glibc's
    defaults each of them is a fresh mmap, whose pages the kernel zeroes at the first
    touch and takes back at the free: on HPC2N, 60,000 page faults and about 0.06 s of
    system time of a 0.5 s command, a third of them on memory that had just been freed.
    From the heap, freed blocks are used again (42,000 faults). Peak memory grows by what
    the heap holds on to (HPC2N: 185 -> 200 MB). A command that runs and exits calls this
    (``simulate``, not ``--stream``: 1 M synthetic jobs streamed peaked at 408 instead of
    361 MB); a long-lived process (``serve``, a notebook) keeps glibc's defaults.
    False where there is no glibc (macOS, musl): nothing changes there."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a libc without mallopt (musl)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) & bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


#: The interpreter's switch interval while :class:`BackgroundImports` runs.
SWITCH_INTERVAL_S = 0.0002


class BackgroundImports:
    """PyArrow (or only NumPy: ``modules``) imported on a second thread while the main
    thread reads the log, then :func:`keep_pandas_unloaded` if PyArrow was.

    Importing PyArrow holds the interpreter lock for about 0.1 s; the reading it overlaps
    spends most of its time without it (decompressing, the native parser, the replay), so
    on two cores the two take the time of the longer. Nothing is imported that would not
    be anyway, in the same state: an import that fails here is simply imported again by
    the main thread, which then gets the error itself. :meth:`wait` before the first use.
    """

    #: What a command that makes Arrow tables needs (the streamed replay, the network
    #: model's columns): numpy.ma is what the first ``pa.array`` imports (15 ms). Not
    #: ``pyarrow.parquet``: the result files are written by the native writer
    #: (toposched.parquet_out); the streamed replay reads its temporary jobs file back and
    #: imports it with toposched.stream
    ARROW = ("pyarrow", "numpy.ma")
    #: What the whole replay needs: it writes its files from NumPy arrays (toposched.results)
    NUMPY = ("numpy",)

    def __init__(self, modules: tuple[str, ...] = ARROW) -> None:
        import threading

        self._modules = modules

        # Hand the interpreter lock over sooner while the two threads share it: a thread
        # that comes back from work without the lock (zlib hands back every output block)
        # waits up to the switch interval (5 ms) for an importing thread to let go.
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL_S))
        # What the import thread writes to stderr is dropped: a failed import is imported
        # again by the main thread, which reports it. (A Ctrl-C that interrupts the main
        # thread's NumPy import leaves NumPy unloadable; PyArrow's init then prints that
        # ImportError's traceback itself, from C, above the one line "interrupted".)
        self._stderr = _QuietThread(sys.stderr)
        sys.stderr = self._stderr
        # A daemon, so that the interpreter's exit does not wait for it: a Ctrl-C that
        # lands inside an import on the main thread can leave that module's import lock
        # held (CPython releases it in Python code the interrupt cut short), and this thread
        # then waits for it forever. An early error exit still waits for the import
        # (close() joins) instead of tearing the interpreter down under it.
        self._thread = threading.Thread(target=self._work, name="toposched-imports", daemon=True)
        self._thread.start()
        self._stderr.quiet_ident = self._thread.ident

    def _work(self) -> None:
        import importlib

        for name in self._modules:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - the main thread imports it again and reports
                return

    def wait(self) -> None:
        """Join the thread, then keep pandas unloaded (on the main thread, no other
        thread importing: :func:`keep_pandas_unloaded` edits ``sys.meta_path``)."""
        self.close()
        if "pyarrow" in sys.modules:  # (it would import PyArrow otherwise)
            keep_pandas_unloaded()

    def close(self, timeout_s: float | None = None) -> None:
        """Join the thread (at most ``timeout_s``: a Ctrl-C that cut an import short on the
        main thread, even one turned into another error by an extension's init, can leave
        the thread waiting for ever) and restore the switch interval and stderr (again: a
        no-op)."""
        self._thread.join(timeout_s)
        sys.setswitchinterval(self._interval)
        if sys.stderr is self._stderr:
            sys.stderr = self._stderr.stream


class _QuietThread:
    """A stream that drops what one thread (``quiet_ident``) writes and passes on the rest."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.quiet_ident: int | None = None

    def write(self, text: str) -> int:
        import threading

        if self.quiet_ident is not None and threading.get_ident() == self.quiet_ident:
            return len(text)
        written = self.stream.write(text)
        return len(text) if written is None else int(written)  # some consoles return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def column_numpy(column: "pa.ChunkedArray | pa.Array") -> "np.ndarray":
    """A numeric Arrow column without nulls as a NumPy array, read from its buffers
    (``to_numpy`` would import pandas: see above). Other columns go to ``to_numpy``."""
    import numpy as np
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        t = chunk.type
        if pa.types.is_boolean(t) and not chunk.null_count:
            bits = np.unpackbits(np.frombuffer(chunk.buffers()[1], np.uint8), bitorder="little")
            parts.append(bits[chunk.offset : chunk.offset + len(chunk)].astype(bool))
            continue
        floating = pa.types.is_floating(t)
        if (chunk.null_count and not floating) or not (pa.types.is_integer(t) or floating):
            whole: np.ndarray = column.to_numpy(zero_copy_only=False) if isinstance(column, pa.ChunkedArray) else chunk.to_numpy(zero_copy_only=False)
            return whole  # pyarrow is untyped
        dtype = np.dtype(t.to_pandas_dtype())
        values = np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
        if chunk.null_count:  # nulls of a floating column read as NaN, as to_numpy gives them
            valid = np.unpackbits(np.frombuffer(chunk.buffers()[0], np.uint8), bitorder="little")
            values = np.where(valid[chunk.offset : chunk.offset + len(chunk)].astype(bool), values, np.nan).astype(dtype)
        parts.append(values)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, np.dtype(column.type.to_pandas_dtype()))
