"""Errors raised for bad input.

Every input error names the file, the line (1-based, as an editor shows it) and the field,
so a user can open the file and fix it. Nothing is repaired silently: repairs are counted
(see :mod:`toposched.workload.model`) and malformed records either stop the run or, with
``lenient=True``, are skipped and counted.
"""

from __future__ import annotations


class ToposchedError(Exception):
    """Base class of every error toposched raises on purpose."""


class InputError(ToposchedError, ValueError):
    """A problem in an input file, located as precisely as we can.

    ``line`` is 1-based; ``field`` is the name of the field (column) at fault, as the
    format's documentation names it. Either may be ``None`` when the problem is about the
    whole file (an empty file, a missing header).
    """

    def __init__(
        self,
        path: str,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        #: The way out, as a user spells it on the command line (e.g. "--lenient ...").
        self.hint = hint
        where = self.path
        if line is not None:
            where += f":{line}"
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}" + (f" ({hint})" if hint else ""))


class TraceFormatError(InputError):
    """A job log (SWF, sacct, PBS) that cannot be read."""


#: What a reader's strict error says about the way out.
LENIENT_HINT = "--lenient skips and counts such records"


class TopologyError(InputError):
    """A fabric description (topology.conf, preset or parameters) that cannot be built."""


class SimulationError(ToposchedError):
    """A replay that cannot go on: a policy written in Python failed or answered wrongly,
    or an invariant check found a violation. The message says which and why."""


def require_list(func: str, name: str, value: object) -> None:
    """Refuse a bare string where a list of strings is meant: iterated, ``"isolated"`` is
    the names ``"i"``, ``"s"``, ..., and the error then names the letter ``'i'``, not the
    mistake (a notebook's ``allocs="isolated"``)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{func}(): {name} must be a list of strings, e.g. {name}=[{value!r}], got the string {value!r}")
