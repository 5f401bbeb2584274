"""The native SWF fast path (`_core.swf_plain_chunk`) against the NumPy one it replaces:
the same chunks accepted, the same values, line numbers and counts, on generated
near-SWF text (Hypothesis) and on the real logs under tests/data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from swf_numpy_reference import fast_chunk_numpy
from toposched.workload import swf

DATA = Path(__file__).parent / "data"


def _both(chunk: bytes, first_line: int = 7):
    results = []
    for parse in (swf._fast_chunk, fast_chunk_numpy):
        col = swf._Collector("x.swf", False)
        n = parse(chunk, first_line, col)
        rows = np.concatenate(col.rows).tolist() if col.rows else []
        lines = np.concatenate(col.lines).tolist() if col.lines else []
        results.append((n, col.records, rows, lines))
    return results


# Tokens that are plain numbers, near misses of every rule, and the odd stray byte.
_TOKENS = st.one_of(
    st.integers(-(10**19), 10**19).map(lambda v: str(v).encode()),
    st.sampled_from([b"-1", b"0", b"3600.0", b"3600.00", b"3600.5", b"5.", b"-5.0", b".5", b"-", b"-.5", b"1-2", b"1.2.3", b"--1", b"7.-", b"0.000", b"12a", b"1e3", b"1E3", b"+7", b".0", b"1.0000000000000001", b"00012", b"1234567890123456789", b"-123456789012345678"]),
)
_BLANKS = st.sampled_from([b" ", b"  ", b"\t", b" \r"])


@st.composite
def _chunks(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(_BLANKS) if draw(st.booleans()) else b"")
            continue
        n = swf.N_FIELDS if kind > 2 else draw(st.integers(1, swf.N_FIELDS + 2))
        toks = [draw(_TOKENS) if draw(st.integers(0, 4)) == 0 else str(draw(st.integers(-1, 10**6))).encode() for _ in range(n)]
        lines.append(draw(st.sampled_from([b"", b" "])) + draw(_BLANKS).join(toks) + draw(st.sampled_from([b"", b" ", b"\r"])))
    text = b"\n".join(lines)
    return text + (b"\n" if draw(st.booleans()) else b"")


@settings(max_examples=600, deadline=None)
@given(_chunks())
def test_native_and_numpy_agree_on_generated_chunks(chunk: bytes) -> None:
    native, numpy_path = _both(chunk)
    assert native == numpy_path


def test_native_and_numpy_agree_on_real_logs() -> None:
    import gzip
    import zlib

    logs = sorted(p for p in DATA.rglob("*.swf*") if p.suffix in (".swf", ".gz"))
    read = 0
    for path in logs:
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except (OSError, EOFError, zlib.error):
            continue  # the regression corpus holds broken archives on purpose
        read += 1
        body = b"\n".join(line for line in data.split(b"\n") if not line.lstrip().startswith(b";"))
        native, numpy_path = _both(body)
        assert native == numpy_path, path
    assert read >= 3
