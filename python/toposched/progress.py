"""Progress of long work, wherever the output goes: a rich progress bar on a terminal, and
otherwise (CI, nohup, a pipe, a notebook) a log line at most every ``interval_s`` seconds
with the percentage, the rate and the time left, on the ``toposched`` logger (stderr).
``quiet`` silences both. Progress uses the wall clock only to decide when to speak: it never
changes a result.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

log = logging.getLogger("toposched")


def setup_logging(*, quiet: bool = False, verbose: int = 0) -> None:
    """Log lines to stderr: warnings only with ``quiet``, info by default, debug with -v."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    if not log.handlers:
        h = _Stderr()
        h.setFormatter(logging.Formatter("toposched: %(message)s"))
        log.addHandler(h)
        log.propagate = False
    log.setLevel(level)


class _Stderr(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is when a line is logged (a test harness or a
    notebook may replace it after the handler was made)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _eta(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """``with Progress("replaying", total=n, unit="jobs submitted") as p: p.update(done)``."""

    def __init__(self, what: str, *, total: int | None, unit: str, console: Any = None, quiet: bool = False, interval_s: float = 5.0, defer_start: bool = False) -> None:
        self.what, self.total, self.unit = what, total, unit
        #: the "started" log line waits for the first update: the work's own input checks
        #: come first, and an error there is said alone (compare printed "comparing:
        #: started (? runs)" above "error: TRACE: no such file")
        self._defer_start = defer_start
        self.quiet = quiet
        self.interval_s = interval_s
        self.console = console
        self._bar: Any = None
        self._task: Any = None
        self._t0 = self._last = 0.0
        #: set by :meth:`interrupted`: the work stopped short (a Ctrl-C the work caught)
        self._stopped = False

    def interrupted(self) -> None:
        """The work was stopped before its end: the closing line says so, not "done"."""
        self._stopped = True

    def __enter__(self) -> "Progress":
        self._t0 = self._last = time.monotonic()
        if self.quiet:
            return self
        if self.console is not None and self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self._bar = Bar(TextColumn(self.what), BarColumn(), MofNCompleteColumn(), TextColumn(self.unit), TextColumn("{task.description}"), TimeRemainingColumn(), console=self.console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        elif not self._defer_start:
            self._log_start()
        return self

    def _log_start(self) -> None:
        self._defer_start = False
        log.info("%s: started (%s %s)", self.what, f"{self.total:,}" if self.total is not None else "?", self.unit)

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        if total is not None:
            self.total = total
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=self.total, description=note)
            return
        if self._defer_start:
            self._log_start()
        now = time.monotonic()
        if now - self._last < self.interval_s:
            return
        self._last = now
        elapsed = now - self._t0
        rate = done / elapsed if elapsed > 0 else 0.0
        if self.total:
            left = (self.total - done) / rate if rate > 0 else float("inf")
            eta = _eta(left) if left != float("inf") else "?"
            log.info("%s: %.0f%% (%s of %s %s), %s/s, ETA %s%s", self.what, 100 * done / self.total, f"{done:,}", f"{self.total:,}", self.unit, f"{rate:,.0f}", eta, f" ({note})" if note else "")
        else:
            log.info("%s: %s %s, %s/s", self.what, f"{done:,}", self.unit, f"{rate:,.0f}")

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif not self.quiet and exc[0] is None and not self._defer_start:
            log.info("%s: %s in %.1f s", self.what, "interrupted" if self._stopped else "done", time.monotonic() - self._t0)
