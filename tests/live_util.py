"""Start and stop a real ``toposched serve`` process for the live tests."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from toposched.live.client import Client


def write_token(path: Path) -> str:
    token = secrets.token_hex(24)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


class ServiceProcess:
    """``toposched serve`` in a subprocess, listening on a free loopback port (or a unix
    socket), its state in ``workdir/state``."""

    def __init__(self, workdir: Path, system: str = "hype", alloc: str = "isolated", *, unix: bool = False, extra: list[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.system, self.alloc, self.unix = system, alloc, unix
        self.extra = extra or []
        self.token_file = self.workdir / "token"
        self.token = write_token(self.token_file) if not self.token_file.exists() else self.token_file.read_text().strip()
        self.state = self.workdir / "state"
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.listen = f"unix:{self.workdir / 'serve.sock'}" if unix else "127.0.0.1:0"

    def start(self, timeout_s: float = 30.0) -> "ServiceProcess":
        cmd = [
            sys.executable, "-m", "toposched.cli", "serve", "--system", self.system, "--alloc", self.alloc,
            "--state", str(self.state), "--listen", self.listen, "--token-file", str(self.token_file), *self.extra,
        ]
        self.stderr = open(self.workdir / "serve.stderr", "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            raise RuntimeError(f"serve did not start: {line!r}; stderr: {(self.workdir / 'serve.stderr').read_text()[-2000:]}")
        where = line.split("listening on ", 1)[1].split(";", 1)[0]
        self.url = where if where.startswith("unix:") else f"http://{where}"
        if not self.unix:
            # the next start keeps the port, as a restarted service would
            self.listen = where
        return self

    def client(self, token: str | None = "default") -> Client:
        return Client(self.url, self.token if token == "default" else token)

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.stderr.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.stderr.close()
            if self.proc.stdout:
                self.proc.stdout.close()
        self.proc = None

    def __enter__(self) -> "ServiceProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
