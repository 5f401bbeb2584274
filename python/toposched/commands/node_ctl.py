"""`toposched node-ctl`: talk to a node agent from a shell (Slurm prolog/epilog, admins)."""

from __future__ import annotations

import argparse
import json
import os

NAME = "node-ctl"
HELP = "query, allocate or release on a node agent (for prolog/epilog scripts)"
DESCRIPTION = """\
Send one request to a node agent and print its JSON answer. Exit status: 0 done,
1 the agent cannot do it now (wait/busy) or the job is unknown, 2 an error (bad
requirement, impossible request, agent unreachable)."""
EPILOG = """\
examples:
  toposched node-ctl --agent unix:/run/toposched/node-agent.sock query --requirement 'CORES=4;WAIT'
  toposched node-ctl --token-file /etc/toposched/agent.token allocate --job 42 --requirement CORES=4 --uid 1000
  toposched node-ctl --token-file /etc/toposched/agent.token release --job 42"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .run_in import DEFAULT_AGENT

    parser.add_argument("--agent", default=os.environ.get("TOPOSCHED_AGENT", DEFAULT_AGENT), metavar="unix:PATH|HOST:PORT",
                        help=f"node agent address (default: $TOPOSCHED_AGENT or {DEFAULT_AGENT})")
    parser.add_argument("--token-file", metavar="FILE", help="bearer token (needed for allocate and release)")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = sub.add_parser("query", help="where would a job go now, and how well")
    q.add_argument("--requirement", required=True, metavar="R")
    a = sub.add_parser("allocate", help="allocate cores and create the job's cpuset")
    a.add_argument("--job", required=True)
    a.add_argument("--requirement", required=True, metavar="R")
    a.add_argument("--uid", type=int, help="the job's user id (may bind itself with run-in)")
    r = sub.add_parser("release", help="kill what is left of the job and remove its cpuset")
    r.add_argument("--job", required=True)
    sub.add_parser("state", help="allocations and free CPUs")
    c = sub.add_parser("reconcile", help="release every allocation whose job is not listed (jobs still running here)")
    c.add_argument("--jobs", required=True, metavar="ID,ID,...", help="comma-separated ids of the jobs still running on this host ('' for none)")


def run(args: argparse.Namespace) -> int:
    from ..errors import ToposchedError
    from ..tokens import read_token_file
    from ..node.client import AgentAddressError, AgentClient

    token = read_token_file(args.token_file) if args.token_file else None
    try:
        client = AgentClient(args.agent, token)
    except AgentAddressError as exc:
        raise ToposchedError(f"--agent {args.agent}: {exc.why}") from None
    if args.action == "query":
        status, body = client.request("POST", "/v1/query", {"requirement": args.requirement})
    elif args.action == "allocate":
        status, body = client.allocate(args.job, args.requirement, args.uid)
    elif args.action == "release":
        status, body = client.release(args.job)
    elif args.action == "reconcile":
        jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
        status, body = client.request("POST", "/v1/reconcile", {"jobs": jobs})
    else:
        status, body = client.request("GET", "/v1/state")
    print(json.dumps(body, sort_keys=True))
    if status == 200 and args.action == "query" and body.get("status") == "impossible":
        # never on this host: 2, as allocate's 422 (1 is wait or busy: try again later)
        raise ToposchedError(f"node agent at {args.agent}: query: impossible: {body.get('reason', '')}")
    if status == 200:
        return 1 if args.action == "query" and body.get("status") != "ok" else 0
    if status in (404, 409):
        return 1
    raise ToposchedError(f"node agent at {args.agent}: {args.action} refused ({status}): {body.get('reason', '')}")
