"""The NumPy plain-SWF chunk parser that ``_core.swf_plain_chunk`` replaced
(toposched's reader until the native one; crates/toposched-py/src/readers.rs): kept here
as the native parser's independent reference (tests/test_swf_native.py), written with
array operations where the native one is one pass over the bytes."""

from __future__ import annotations

import numpy as np

from toposched.swf_layout import MAX_FAST_DIGITS, N_FIELDS, USED
from toposched.workload import swf

# Bytes the fast path accepts in a chunk: digits, '-', '.', and the whitespace that
# separates tokens. Anything else (letters, ';', '+', 'e', non-ASCII) sends the chunk to
# the slow path, which either accepts it (e.g. "+1", or "1e3" in an ignored field) or
# reports it precisely.
FAST_BYTES = b"0123456789-. \t\r\n"
POW10 = 10 ** np.arange(19, dtype=np.int64)  # exact up to 10**18 < 2**63


def fast_chunk_numpy(chunk: bytes, first_line: int, col: swf._Collector) -> int | None:
    """Parse a plain-SWF chunk with array operations and return the number of lines read;
    None (nothing recorded) if the chunk is anything but plain, so that the caller hands
    it to the slow path.

    ``chunk`` holds whole lines (it ends with a newline, or at the end of the file).
    """
    if len(chunk) >= 2**31 - 2 or chunk.translate(None, FAST_BYTES):
        return None  # (int32 offsets below; only a single >2 GB line could get here)
    # Pad with a newline on each side so that every token has a blank before and after
    # it and every line (including the first and last) sits between two newlines.
    buf = b"\n" + chunk + (b"" if chunk.endswith(b"\n") else b"\n")
    u8 = np.frombuffer(buf, dtype=np.uint8)
    solid = u8 > 32  # after the byte check: True on digits, '-', '.'; False on blanks
    # (`!= 0` first: flatnonzero on the bool mask is ~6x faster than on the int8 diff.)
    edges = np.flatnonzero(np.diff(solid.view(np.int8)) != 0) + 1
    starts = edges[0::2]  # first byte of each token
    ends = edges[1::2]  # one past its last byte

    # Exactly 18 tokens on every non-blank line.
    newlines = np.flatnonzero(u8 == 10)
    per_line = np.diff(np.searchsorted(starts, newlines))
    data_lines = np.flatnonzero(per_line)
    n_lines = newlines.size - 1
    if data_lines.size == 0:
        return n_lines  # blank lines only
    if not np.all(per_line[data_lines] == N_FIELDS):
        return None
    k = data_lines.size

    # Token syntax -?d+(.d*)? : '-' only first and followed by a digit, '.' preceded by a
    # digit and at most once per token. Anything else is for the slow path to judge.
    # (Whole-buffer masks beat locating the many '-1' tokens with flatnonzero; the
    # uint8 subtraction wraps, so "> 9" is "not a digit".)
    if np.any((u8[1:-1] == 45) & (solid[:-2] | ((u8[2:] - 48) > 9))):
        return None
    int_end = ends
    dots = np.flatnonzero(u8 == 46)
    if dots.size:
        before = u8[dots - 1]
        if not np.all((before >= 48) & (before <= 57)):
            return None
        dot_tok = np.searchsorted(starts, dots, side="right") - 1
        if dot_tok.size > 1 and not np.all(np.diff(dot_tok) != 0):
            return None
        # Kept fields must be integral: "3600.0" is 3600, "3600.5" goes to the slow path
        # (which reports it). Such tokens are rare, so a Python loop is fine.
        used_dot = np.isin(dot_tok % N_FIELDS, USED)
        for p, t in zip(dots[used_dot].tolist(), dot_tok[used_dot].tolist()):
            if buf[p + 1 : int(ends[t])].strip(b"0"):
                return None
        int_end = ends.copy()
        int_end[dot_tok] = dots

    # Integer value of the kept fields: the sum of digit * 10**place over the digits of
    # each token, vectorized: list every digit (np.repeat), weigh it, take a running sum
    # and difference it at token boundaries. The running sum may wrap around int64, but
    # each difference is exact modulo 2**64 and every value fits in int64 (<= 18 digits).
    # Chunk offsets fit in int32, which halves the memory traffic of the digit arrays.
    tok = np.arange(k * N_FIELDS, dtype=np.int64).reshape(k, N_FIELDS)[:, USED].ravel()
    s = starts[tok]
    neg = u8[s] == 45
    ds = (s + neg).astype(np.int32)
    ie = int_end[tok].astype(np.int32)
    nd = ie - ds
    if int(nd.max()) > MAX_FAST_DIGITS:
        return None
    last = np.cumsum(nd, dtype=np.int32)  # one past each token's last digit in the digit list
    pos = np.arange(int(last[-1]), dtype=np.int32) + np.repeat(ds - (last - nd), nd)
    place = np.repeat(ie - 1, nd) - pos
    running = np.cumsum((u8[pos] - 48).astype(np.int64) * POW10[place])
    values = running[last - 1]
    values[1:] -= running[last[:-1] - 1]
    np.negative(values, out=values, where=neg)

    col.records += k
    col.rows.append(values.reshape(k, len(USED)))
    col.lines.append(first_line + data_lines.astype(np.int64))
    return n_lines
