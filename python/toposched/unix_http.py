"""HTTP over a unix socket with the standard library: what the clients of ``toposched
serve`` and of ``toposched node-agent`` (both listen on ``unix:PATH`` too) connect with."""

from __future__ import annotations

import http.client
import os
import socket
from typing import Any

# A decoded JSON object: the bodies the HTTP APIs of serve and node-agent send and receive.
# The wire format is the boundary where values are checked by the code, not by the types.
JsonObject = dict[str, Any]


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client.HTTPConnection`` to the unix socket at ``path``."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def socket_file_stamp(path: str) -> tuple[int, int] | None:
    """(device, inode) of the socket file a server has just bound at ``path``."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def remove_socket_file(path: str, stamp: tuple[int, int] | None) -> None:
    """Remove the socket file a stopping server bound (``stamp``: :func:`socket_file_stamp`
    after the bind), unless another process has put a file of its own at ``path`` since."""
    if stamp is not None and socket_file_stamp(path) == stamp:
        try:
            os.unlink(path)
        except OSError:
            pass  # gone in between
