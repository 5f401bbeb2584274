"""Load benchmark of `toposched serve` (not a test; figures go to BENCHMARKS.md).

Starts the service on the 1,296-node `cab` fabric (isolated by default) with its state on
disk, then:

1. **throughput**: C client processes, each on one kept-alive connection, run allocate +
   release pairs (sizes drawn from 1..64 nodes, seeded) as fast as they can for D seconds;
   reports pairs per second;
2. **latency**: one client sends allocate/release requests at a fixed rate (200 per second by
   default, open loop: each request is sent at its scheduled time) and reports p50/p99/max.

    python benches/bench_live.py [--clients 16] [--seconds 10] [--rate 200] [--alloc isolated]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from toposched.live.client import Client  # noqa: E402


def start_service(work: Path, system: str, alloc: str) -> tuple[subprocess.Popen, str, str]:
    token = secrets.token_hex(24)
    tf = work / "token"
    tf.write_text(token)
    tf.chmod(0o600)
    p = subprocess.Popen(
        [sys.executable, "-m", "toposched.cli", "serve", "--system", system, "--alloc", alloc, "--state", str(work / "state"),
         "--listen", "127.0.0.1:0", "--token-file", str(tf), "--quiet"],
        stdout=subprocess.PIPE, text=True,
    )
    line = p.stdout.readline()
    where = line.split("listening on ", 1)[1].split(";", 1)[0]
    return p, f"http://{where}", token


class RawClient:
    """A lean HTTP/1.1 client (one socket, requests built by hand) so that the load
    generator, which shares the machine's two cores with the service, costs little."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.auth = f"Authorization: Bearer {token}\r\n"
        self.buf = b""

    def post(self, path: str, body: dict) -> int:
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\n{self.auth}Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        self.sock.sendall(head.encode() + data)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head_end = self.buf.index(b"\r\n\r\n") + 4
        head_text = self.buf[:head_end].decode("latin-1")
        length = int(head_text.lower().split("content-length:", 1)[1].split("\r\n", 1)[0])
        while len(self.buf) < head_end + length:
            self.buf += self.sock.recv(65536)
        self.buf = self.buf[head_end + length :]
        return int(head_text.split(" ", 2)[1])


def pairs_worker(url: str, token: str, seconds: float, seed: int, out: mp.Queue) -> None:
    c = RawClient(url, token)
    rng = random.Random(seed)
    n = 0
    refused = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        job = f"w{seed}-{n}"
        code = c.post("/v1/allocate", {"job": job, "nodes": rng.randint(1, 64), "walltime_s": 3600})
        if code == 200:
            assert c.post("/v1/release", {"job": job}) == 200
        else:
            refused += 1
        n += 1
    out.put((n, refused))


def throughput(url: str, token: str, clients: int, seconds: float) -> tuple[float, int]:
    q: mp.Queue = mp.Queue()
    procs = [mp.Process(target=pairs_worker, args=(url, token, seconds, i, q)) for i in range(clients)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results = [q.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    return sum(n for n, _ in results) / elapsed, sum(r for _, r in results)


def latency(url: str, token: str, rate: float, seconds: float) -> list[float]:
    """Open loop at `rate` requests/s, alternating allocate and release of the same job."""
    c = Client(url, token)
    rng = random.Random(7)
    lat = []
    t0 = time.perf_counter()
    total = int(rate * seconds)
    for i in range(total):
        due = t0 + i / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        job = f"l{i // 2}"
        body = {"job": job, "nodes": rng.randint(1, 64), "walltime_s": 3600} if i % 2 == 0 else {"job": job}
        start = due
        c.request("POST", "/v1/allocate" if i % 2 == 0 else "/v1/release", body)
        lat.append(time.perf_counter() - start)  # from the scheduled send time: queueing counts
    return lat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", default="cab")
    ap.add_argument("--alloc", default="isolated")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--state-dir", help="parent directory of the service's state (default: a temporary directory)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-live-", dir=args.state_dir))
    proc, url, token = start_service(work, args.system, args.alloc)
    try:
        pps, refused = throughput(url, token, args.clients, args.seconds)
        lat = sorted(latency(url, token, args.rate, args.seconds))
        p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
        print(f"fabric {args.system}, --alloc {args.alloc}, state on {work} ({os.uname().machine}, {os.cpu_count()} CPUs)")
        print(f"throughput: {pps:,.0f} allocate+release pairs/s with {args.clients} clients over {args.seconds:g} s ({refused} refused)")
        print(f"latency at {args.rate:g} requests/s for {args.seconds:g} s: p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, max {lat[-1] * 1000:.2f} ms")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
