#!/bin/sh
# Slurm Prolog (runs as root on each node of the job, before it starts): ask this node's
# toposched agent for the job's cores and create its cpuset toposched/job_$SLURM_JOB_ID.
#
# The requirement comes from $TOPOSCHED_REQUIREMENT if set (tests, site wrappers), else
# from the job's comment "toposched:REQUIREMENT" (sbatch --comment 'toposched:CORES=8'),
# else the whole node is left alone (no cpuset, exit 0).
# No WAIT here: Slurm has already started the job on this node; waiting for a good
# placement is the scheduler's business (toposched serve / the bridge query agents first).
set -eu
AGENT="${TOPOSCHED_AGENT:-unix:/run/toposched/node-agent.sock}"
TOKEN_FILE="${TOPOSCHED_TOKEN_FILE:-/etc/toposched/agent.token}"
TOPOSCHED="${TOPOSCHED:-toposched}"
REQ="${TOPOSCHED_REQUIREMENT:-}"
if [ -z "$REQ" ] && command -v scontrol >/dev/null 2>&1; then
    REQ=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*Comment=toposched:\([^ ]*\).*/\1/p' | head -n 1)
fi
[ -n "$REQ" ] || exit 0
$TOPOSCHED node-ctl --agent "$AGENT" --token-file "$TOKEN_FILE" \
    allocate --job "$SLURM_JOB_ID" --requirement "$REQ" --uid "${SLURM_JOB_UID:-0}" >/dev/null
