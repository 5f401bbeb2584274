"""`toposched node-agent`: the per-host topology agent (best-radius placement, real cpusets)."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import NoReturn

NAME = "node-agent"
HELP = "run the per-host topology agent (best-radius core placement, cgroup cpusets)"
DESCRIPTION = """\
Run the topology agent of one host (seed 002's topology daemon). It reads the node's
hardware graph (hwloc XML, or the running machine with --topology live), answers whether
and how well a job's topology requirement fits now (best radius), creates a cgroup cpuset
toposched/job_<ID> per allocation and removes it at release (killing leftover processes).
State is durable under --state; at start, stored allocations are kept and cpusets of jobs
it does not know are removed. HTTP + JSON on --listen (docs/node-agent.md)."""
EPILOG = """\
example:
  toposched node-agent --topology live --state /var/lib/toposched/agent \\
      --listen unix:/run/toposched/node-agent.sock --token-file /etc/toposched/agent.token"""


def cgroup_dir_name(text: str) -> str:
    """One directory name under the cgroup base (the job cpusets' parent), by the rule of job
    ids: a path such as ../x would leave the base."""
    from ..node.cpuset import check_job_id

    try:
        return check_job_id(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not one directory name (1-100 characters of A-Z a-z 0-9 _ . + -)") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topology", required=True, metavar="FILE|live", help="hwloc XML file (lstopo --of xml) or 'live' for this machine")
    parser.add_argument("--state", required=True, metavar="DIR", help="directory of the durable state (SQLite)")
    parser.add_argument("--listen", required=True, metavar="unix:PATH|HOST:PORT", help="where to serve HTTP")
    parser.add_argument("--token-file", required=True, metavar="FILE", help="bearer token for allocate/release (a file only its owner can read)")
    parser.add_argument("--cpusets", default="auto", choices=["auto", "v1", "v2", "none"], help="cgroup hierarchy for cpusets; 'none' places without binding (default: auto)")
    parser.add_argument("--cgroup-root", metavar="DIR", help="base cgroup directory (a delegated v2 subtree); default: the mount point")
    parser.add_argument("--cgroup-prefix", type=cgroup_dir_name, default="toposched", metavar="NAME", help="directory of the job cpusets under the base (default: toposched)")
    parser.add_argument("--reserve-cpus", default="", metavar="LIST", help="PUs never given to jobs, e.g. 0 for the OS (Linux list form)")
    parser.add_argument("--host", metavar="NAME", help="host name to report (default: from the topology, else this machine's)")


def run(args: argparse.Namespace) -> int:
    from ..node.agent import NodeAgent, make_server
    from ..tokens import read_token_file
    from ..node.cpulist import CpuListError, parse_cpulist
    from ..node.cpuset import detect
    from ..node.hwloc import load_topology
    from ..node.store import AgentStore
    from ..errors import ToposchedError

    token = read_token_file(args.token_file)
    topology = load_topology(args.topology)
    try:
        reserved = parse_cpulist(args.reserve_cpus)
    except CpuListError as exc:
        raise ToposchedError(f"--reserve-cpus: {exc}") from None
    if not reserved <= frozenset(topology.pus):
        from ..node.cpulist import format_cpulist

        raise ToposchedError(f"--reserve-cpus {args.reserve_cpus}: PUs {format_cpulist(reserved - frozenset(topology.pus))} "
                             f"are not in the topology {topology.source} (PUs {format_cpulist(topology.pus)})")
    backend = None if args.cpusets == "none" else detect(args.cpusets, args.cgroup_prefix, args.cgroup_root)
    store = AgentStore(args.state)
    agent = NodeAgent(topology, store, backend, reserved_pus=reserved, host=args.host)
    agent.start()

    def stop(signum: int, frame: FrameType | None) -> NoReturn:  # serve_forever returns; the state is already durable
        raise KeyboardInterrupt

    # before "listening" is said: a SIGTERM right after it is a clean stop (the socket
    # file removed), not the default handler's death
    signal.signal(signal.SIGTERM, stop)
    server, where = make_server(agent, args.listen, token)
    try:
        print(f"node-agent: listening on {where}", file=sys.stderr, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        store.close()
    return 0
