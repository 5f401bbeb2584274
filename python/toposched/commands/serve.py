"""`toposched serve`: the placement service (HTTP + JSON, durable state)."""

from __future__ import annotations

import argparse

from .. import _core

NAME = "serve"
HELP = "run the placement service: the simulator's allocation policies deciding for a live resource manager"
DESCRIPTION = (
    "Serve placements over HTTP + JSON with the replay's own allocation policies (docs/live.md). "
    "Every decision is committed to SQLite under --state before it is answered; writes need the bearer "
    "token of --token-file (a file only its owner can read). The API is described at /v1/openapi.json."
)
EPILOG = """examples:
  openssl rand -hex 32 > token && chmod 600 token
  toposched serve --system topology.conf --alloc isolated --state /var/lib/toposched \\
      --listen 127.0.0.1:8700 --token-file token
  toposched serve --system hype --alloc isolated --state st --listen unix:/run/toposched.sock --token-file token
"""


def _history_days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        days = -1
    if not 0 <= days <= 100_000:
        raise argparse.ArgumentTypeError(f"expected a whole number of days from 0 (for ever) to 100000, got {text!r}")
    return days


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", required=True, metavar="FABRIC", help="preset, fattree:K=..,S=..,P=.. or a Slurm topology.conf")
    parser.add_argument("--alloc", default="isolated", choices=_core.ALLOCATORS, help="allocation policy (default: isolated)")
    parser.add_argument("--state", required=True, metavar="DIR", help="directory of the durable state (created; one service per directory)")
    parser.add_argument("--listen", default="127.0.0.1:8700", metavar="HOST:PORT|unix:PATH", help="where to listen (default: 127.0.0.1:8700)")
    parser.add_argument("--token-file", required=True, metavar="FILE", help="bearer token for writes; mode 0600, owned by the service's user")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random policy (default: 0)")
    parser.add_argument("--leaf-order", default="flux-topo", choices=("flux-topo", "paper"), help="isolated: T3 leaf order")
    parser.add_argument("--tie-break", default="name", choices=("name", "index"), help="isolated: tie order")
    parser.add_argument("--slurm-profile", default="current", choices=("current", "classic"), help="slurm-tree: which Slurm version's rules")
    parser.add_argument("--node-agents", metavar="FILE", help="TOML naming each node's agent (toposched node-agent): jobs that state a per-host requirement go only to hosts whose agents can meet it, and get each host's CPU list (docs/live.md)")
    parser.add_argument(
        "--keep-history-days", type=_history_days, default=30, metavar="DAYS",
        help="how long released jobs (a second release of one says 'already released', not unknown) and past placements are kept in the state: "
        "30 days by default, 0 keeps them for ever (the state then grows with every job)",
    )
    parser.add_argument("--lenient", action="store_true", help="let a topology.conf listing a node under two leaf switches load, each node on the first (Slurm only warns)")
    parser.add_argument("--quiet", action="store_true", help="do not log each decision on stderr")


def run(args: argparse.Namespace) -> int:
    import sys

    from ..live.service import Service, lock_state_dir, serve_forever
    from ..tokens import read_token_file
    from ..live.table import LiveTable
    from ..topology import load_fabric

    token = read_token_file(args.token_file)
    fabric = load_fabric(args.system, lenient=args.lenient)
    lock_state_dir(args.state)
    table = LiveTable(
        fabric, args.alloc, args.state, seed=args.seed, leaf_order=args.leaf_order, tie_break=args.tie_break, slurm_profile=args.slurm_profile,
        autocommit=False, keep_history_s=args.keep_history_days * 86_400 if args.keep_history_days else None,
    )
    agents = None
    if args.node_agents:
        from ..live.agents import AgentDirectory

        agents = AgentDirectory.load(args.node_agents)
        unknown = sorted(set(agents.agents) - set(table.names))
        if unknown:
            # a typo would leave the real node without an agent: every job stating a
            # requirement refused there, with no word at start
            from ..errors import InputError

            raise InputError(
                args.node_agents, f"[agents] names {', '.join(unknown)}, not on fabric {fabric.name} (its nodes: {table.names[0]} ...)",
                field=f"agents.{unknown[0]}",
            )
    return serve_forever(Service(table, token, log=None if args.quiet else sys.stderr, agents=agents), args.listen)
