"""Bearer tokens: read from a file only its owner can read (as ``toposched serve``)."""

from __future__ import annotations

import hmac
import os
import stat
from pathlib import Path

from ..errors import ToposchedError


class TokenFileError(ToposchedError):
    pass


def read_token_file(path: str | Path) -> str:
    """The token in ``path``; refuses a file that others could read or that is empty."""
    path = Path(path)
    try:
        st = path.stat()
        text = path.read_text().strip()
    except OSError as exc:
        raise TokenFileError(f"--token-file {path}: cannot read ({exc.strerror})") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(f"--token-file {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read it; chmod 600 {path}")
    if st.st_uid != os.geteuid():
        raise TokenFileError(f"--token-file {path}: owned by uid {st.st_uid}, not by this user ({os.geteuid()})")
    if not text:
        raise TokenFileError(f"--token-file {path}: is empty")
    return text


def token_matches(header: str | None, token: str) -> bool | None:
    """``None`` without an ``Authorization: Bearer`` header, else whether it is right."""
    if not header or not header.startswith("Bearer "):
        return None
    return hmac.compare_digest(header[len("Bearer "):].strip().encode(), token.encode())
