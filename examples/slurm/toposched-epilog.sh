#!/bin/sh
# Slurm Epilog (runs as root on each node after the job): kill what is left of the job in
# its cpuset and remove it. A job that never had one (no requirement) is not an error.
set -eu
AGENT="${TOPOSCHED_AGENT:-unix:/run/toposched/node-agent.sock}"
TOKEN_FILE="${TOPOSCHED_TOKEN_FILE:-/etc/toposched/agent.token}"
TOPOSCHED="${TOPOSCHED:-toposched}"
status=0
$TOPOSCHED node-ctl --agent "$AGENT" --token-file "$TOKEN_FILE" release --job "$SLURM_JOB_ID" >/dev/null || status=$?
# 1 = the agent holds nothing for this job: fine. 2 = a real failure: let Slurm see it.
[ "$status" -le 1 ] || exit "$status"
