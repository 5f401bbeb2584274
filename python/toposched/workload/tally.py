"""Malformed records of one log: stop at the first, or (``lenient=True``) skip, count and
quote them. Every reader (SWF, extended SWF, sacct, PBS) treats them this way:

* strict: the first malformed record raises a
  :class:`~toposched.errors.TraceFormatError` naming the file, the line and the field,
  with :data:`~toposched.errors.LENIENT_HINT` as the way out;
* lenient: it is counted in ``skipped["malformed_line"]``, and the first
  :data:`MAX_EXAMPLES` messages are kept for ``settings["lenient_examples"]``.

>>> t = Tally("log.swf", lenient=True)
>>> t.fail("expected an integer, got 'x'", line=3, field="procs")
>>> t.skipped, t.examples
({'malformed_line': 1}, ["line 3: field procs: expected an integer, got 'x'"])
>>> str(t.no_valid_records())
"log.swf: no valid job records found (1 malformed; first: line 3: field procs: expected an integer, got 'x')"
>>> Tally("log.swf", lenient=False).fail("bad", line=3)
Traceback (most recent call last):
...
toposched.errors.TraceFormatError: log.swf:3: bad (--lenient skips and counts such records)
"""

from __future__ import annotations

from ..errors import LENIENT_HINT, TraceFormatError

__all__ = ["MAX_EXAMPLES", "Tally"]

#: How many messages a lenient read quotes in ``settings["lenient_examples"]``.
MAX_EXAMPLES = 5


class Tally:
    """The malformed records of one file.

    Args:
        path: the file, as error messages name it.
        lenient: count and skip (True) or raise (False).
        skipped: the reader's ``skipped`` counts, updated in place (so that its keys keep
            the order in which each kind was first met); a new dict when None.
    """

    def __init__(self, path: str, lenient: bool, skipped: dict[str, int] | None = None) -> None:
        self.path = path
        self.lenient = lenient
        self.skipped: dict[str, int] = {} if skipped is None else skipped
        self.examples: list[str] = []

    @property
    def malformed(self) -> int:
        """Malformed records counted so far."""
        return self.skipped.get("malformed_line", 0)

    def fail(self, message: str, *, line: int, field: str | None = None) -> None:
        """A malformed record at ``line`` (1-based): raise, or count and skip it.

        Raises:
            TraceFormatError: unless lenient.
        """
        if not self.lenient:
            raise TraceFormatError(self.path, message, line=line, field=field, hint=LENIENT_HINT)
        self.skipped["malformed_line"] = self.malformed + 1
        if len(self.examples) < MAX_EXAMPLES:
            # the summary of a lenient read already names the file
            where = f"line {line}: field {field}: " if field else f"line {line}: "
            self.examples.append(where + message)

    def no_valid_records(self) -> TraceFormatError:
        """The error for a file whose every record was malformed (for the caller to raise)."""
        return TraceFormatError(self.path, f"no valid job records found ({self.malformed} malformed; first: {self.examples[0]})")
