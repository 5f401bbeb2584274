"""`toposched slurm-bridge`: an external scheduler for one Slurm partition, driving `toposched serve`."""

from __future__ import annotations

import argparse
from types import FrameType

from ._args import positive_int, positive_number


def partition_name(text: str) -> str:
    """A Slurm partition name the bridge can pass to squeue and write into job_submit.lua's
    string literal: not empty, no whitespace, no comma (Slurm's list separator), no quote
    or backslash (they would end the Lua string: the file runs inside slurmctld)."""
    if not text or any(c.isspace() or c in ',"\\' or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(f"not a partition name: {text!r} (no spaces, commas, quotes or backslashes)")
    return text


def service_url(text: str) -> str:
    """http://HOST:PORT, HOST:PORT or unix:PATH, as the client takes it (http:// added)."""
    if text.startswith("unix:"):
        if len(text) == 5:
            raise argparse.ArgumentTypeError("unix:PATH needs a path")
        return text
    hostport = text[len("http://"):] if text.startswith("http://") else text
    host, sep, port = hostport.rstrip("/").rpartition(":")
    if "://" in hostport or "/" in hostport.rstrip("/") or not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT or unix:PATH (e.g. http://127.0.0.1:8700), got {text!r}")
    return f"http://{hostport}"

NAME = "slurm-bridge"
HELP = "place the jobs of a Slurm partition with toposched serve (an external scheduler for Slurm)"
DESCRIPTION = (
    "Keep the held jobs of one Slurm partition (held by the shipped job_submit.lua) under a toposched queue "
    "policy, ask `toposched serve` where each runs, and start it there with scontrol (docs/live.md). "
    "Releases allocations when Slurm reports jobs finished, drains nodes Slurm marks down or drained, and "
    "reconciles the service with Slurm's running jobs at start."
)
EPILOG = """examples:
  toposched slurm-bridge --service http://127.0.0.1:8700 --token-file token --partition topo
  toposched slurm-bridge --print-job-submit-lua > /etc/slurm/job_submit.lua
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service", type=service_url, default="http://127.0.0.1:8700", metavar="URL", help="the service: http://HOST:PORT or unix:PATH (default: http://127.0.0.1:8700)")
    parser.add_argument("--token-file", metavar="FILE", help="the service's bearer token (mode 0600)")
    parser.add_argument("--partition", type=partition_name, default="topo", help="the Slurm partition whose jobs the bridge places (default: topo)")
    parser.add_argument("--queue", default="easy", choices=("easy", "fcfs"), help="queue policy (default: easy)")
    parser.add_argument("--poll-s", type=positive_number, default=2.0, metavar="S", help="seconds between passes (default: 2)")
    parser.add_argument("--unlimited-walltime-s", type=positive_int, default=365 * 86400, metavar="S", help="walltime assumed for jobs without a time limit (default: one year)")
    parser.add_argument("--slurm-timeout-s", type=positive_number, default=15.0, metavar="S", help="timeout of each Slurm command (default: 15)")
    parser.add_argument("--once", action="store_true", help="one pass (with reconciliation), then exit")
    parser.add_argument("--print-job-submit-lua", action="store_true", help="print the job_submit.lua that holds the partition's jobs, and exit")


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    from pathlib import Path

    if args.print_job_submit_lua:
        lua = (Path(__file__).parent.parent / "live" / "job_submit.lua").read_text()
        print(lua.replace('local TOPOSCHED_PARTITION = "topo"', f'local TOPOSCHED_PARTITION = "{args.partition}"'), end="")
        return 0
    from ..live.bridge import Bridge, SlurmCommands, stderr_log
    from ..live.client import Client
    from ..live.service import ServeError
    from ..tokens import read_token_file

    if not args.token_file:
        raise ServeError("--token-file is required (the service's bearer token)")
    token = read_token_file(args.token_file)
    url = args.service  # unix:PATH or http://HOST:PORT (service_url)
    bridge = Bridge(
        Client(url, token), SlurmCommands(timeout_s=args.slurm_timeout_s, log=stderr_log), args.partition,
        queue=args.queue, unlimited_s=args.unlimited_walltime_s, log=stderr_log,
    )
    if args.once:
        from ..live.bridge import SlurmError
        from ..live.client import ServiceUnavailable

        try:
            print(bridge.one_pass(reconcile=True))
        except (SlurmError, ServiceUnavailable) as exc:
            # the site's Slurm or service, after the retries: not a bug; one line (squeue's
            # own messages come over several)
            text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            print(f"error: slurm-bridge --once: {text}", file=sys.stderr)
            return 1
        return 0
    stopping = {"now": False}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stderr_log(f"managing partition {args.partition} with {args.queue}, service {url}, every {args.poll_s:g} s")
    bridge.run_forever(args.poll_s, stop=lambda: stopping["now"])
    return 0
