"""`toposched run-in`: the job starter; joins the job's cpuset, then becomes CMD."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NAME = "run-in"
HELP = "run a command inside a job's cpuset (the job starter)"
DESCRIPTION = """\
Move this process into the cpuset the node agent made for job ID, then exec CMD, so CMD
and every process it starts run on the job's CPUs only. As root it joins the cpuset
directly; otherwise the agent moves it (over the unix socket, checked against the job's
uid). Use it as the first word of a batch script's command line or in a job starter."""
EPILOG = """\
example:
  toposched run-in --job $SLURM_JOB_ID --agent unix:/run/toposched/node-agent.sock -- ./a.out"""

DEFAULT_AGENT = "unix:/run/toposched/node-agent.sock"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, metavar="ID", help="job id the agent allocated")
    parser.add_argument("--agent", default=os.environ.get("TOPOSCHED_AGENT", DEFAULT_AGENT), metavar="unix:PATH|HOST:PORT",
                        help=f"node agent address (default: $TOPOSCHED_AGENT or {DEFAULT_AGENT})")
    parser.add_argument("--token-file", metavar="FILE", help="bearer token (only needed to bind over TCP)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command to run")


def run(args: argparse.Namespace) -> int:
    from ..errors import ToposchedError
    from ..tokens import read_token_file
    from ..node.client import AgentAddressError, AgentClient
    from ..node.cpulist import parse_cpulist
    from ..node.cpuset import check_job_id

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise ToposchedError("run-in: no command given (toposched run-in --job ID -- CMD ...)")
    try:
        check_job_id(args.job)  # the agent's own rule: what it could never hold is no job of it
    except ValueError as exc:
        raise ToposchedError(f"--job {args.job}: {exc}") from None
    token = read_token_file(args.token_file) if args.token_file else None
    try:
        client = AgentClient(args.agent, token)
    except AgentAddressError as exc:
        raise ToposchedError(f"--agent {args.agent}: {exc.why}") from None
    status, job = client.job(args.job)
    if status != 200:
        raise ToposchedError(f"run-in: job {args.job}: {job.get('reason', status)} (agent {args.agent})")
    cgroup = job.get("cgroup")
    if cgroup is None:
        # The agent places without cpusets: pin by affinity, the best available without cgroups.
        print(f"run-in: warning: agent {args.agent} has no cpusets; pinning by sched_setaffinity only", file=sys.stderr)
        os.sched_setaffinity(0, parse_cpulist(job["cpus"]))
    else:
        try:
            Path(cgroup, "cgroup.procs").write_text(str(os.getpid()))
        except PermissionError:
            status, body = client.bind(args.job, None if not token else os.getpid())
            if status != 200:
                raise ToposchedError(f"run-in: the agent would not bind job {args.job}: {body.get('reason', status)}") from None
        except OSError as exc:
            raise ToposchedError(f"run-in: cannot join {cgroup}: {exc.strerror}") from None
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        raise ToposchedError(f"run-in: cannot run {cmd[0]!r}: {exc.strerror}") from None
    return 127  # not reached
