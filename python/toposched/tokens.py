"""Bearer tokens of the live services (``toposched serve``, ``node-agent``, and their
clients ``slurm-bridge``, ``run-in``, ``node-ctl``): one rule for reading a token file and
one for checking a request's ``Authorization`` header."""

from __future__ import annotations

import hmac
import os
import stat
from pathlib import Path

from .errors import ToposchedError

#: Shortest token accepted: a guessable token is no protection (``openssl rand -hex 32``).
MIN_TOKEN_CHARS = 16


class TokenFileError(ToposchedError):
    """A token file that cannot be used (the message names ``--token-file`` and the fix)."""


def read_token_file(path: str | Path) -> str:
    """The bearer token in ``path``, which must be a regular file of this process's user
    that nobody else can read or write (mode 0600 or stricter), holding at least
    :data:`MIN_TOKEN_CHARS` characters (surrounding whitespace is not part of it)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise TokenFileError(f"--token-file {path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TokenFileError(f"--token-file {path}: not a regular file")
    if st.st_uid != os.geteuid():
        raise TokenFileError(f"--token-file {path}: owned by uid {st.st_uid}, not by this process's user (uid {os.geteuid()})")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(f"--token-file {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read or write it; run: chmod 600 {path}")
    try:
        token = p.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"--token-file {path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenFileError(f"--token-file {path}: the token must be at least {MIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 32)")
    return token


def token_matches(header: str | None, token: str) -> bool | None:
    """``None`` without an ``Authorization: Bearer`` header, else whether it carries
    ``token`` (compared in constant time)."""
    if not header or not header.startswith("Bearer "):
        return None
    return hmac.compare_digest(header[len("Bearer "):].strip().encode(), token.encode())
