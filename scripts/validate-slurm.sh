#!/usr/bin/env bash
# The long validation against a real Slurm 22.05 (docs/validation.md, "Against a real Slurm"):
# random 200-job streams (seeds 1-3) and the LLNL Atlas window in tests/data (its jobs of at most 32 nodes),
# FIFO, select/linear and select/cons_tres, on 32 nodes in 4 leaves of 8 in 2 pods; then random seed 1
# under sched/backfill (default SchedulerParameters, and bf_interval=1); then seeds 1-2 under
# priority/multifactor (age and job size), with both schedulers; then seed 1 with two partitions.
# Root only (it starts slurmd); ~5 min per stream and plugin. Usage: scripts/validate-slurm.sh [OUT]
set -euo pipefail
out=${1:-validate-slurm-results}
mkdir -p "$out"
for seed in 1 2 3; do
    toposched validate-slurm --random 200 --seed "$seed" --out "$out/random-$seed" | tee "$out/random-$seed.txt"
done
toposched validate-slurm --trace "$(dirname "$0")/../tests/data/atlas-window-120.swf" --cores-per-node 8 --jobs 200 \
    --arrival-span-s 60 --run-compression 400 --max-run-s 4 --out "$out/atlas" | tee "$out/atlas.txt"
# sched/backfill (queue policy slurm-bf), Slurm's default SchedulerParameters and a cycle every second
toposched validate-slurm --random 200 --seed 1 --scheduler backfill --out "$out/backfill-1" | tee "$out/backfill-1.txt"
toposched validate-slurm --random 200 --seed 1 --scheduler backfill --scheduler-parameters bf_interval=1 \
    --out "$out/backfill-interval1-1" | tee "$out/backfill-interval1-1.txt"
# priority/multifactor: ages to 2 minutes, recalculated every minute (docs/validation.md, "Multifactor priority")
mf=PriorityWeightAge=5000,PriorityWeightJobSize=5000,PriorityMaxAge=2,PriorityCalcPeriod=1
for seed in 1 2; do
    for sched in backfill builtin; do
        toposched validate-slurm --random 200 --seed "$seed" --scheduler "$sched" --multifactor "$mf" \
            --out "$out/multifactor-$sched-$seed" | tee "$out/multifactor-$sched-$seed.txt"
    done
done
# partitions with limits (docs/validation.md, "Partitions with limits"): two partitions sharing a leaf
parts='a=n[00-15]:MaxTime=2:MaxNodes=12,b=n[08-31]'
for sched in builtin backfill; do
    toposched validate-slurm --random 200 --seed 1 --scheduler "$sched" --partitions "$parts" \
        --out "$out/partitions-$sched-1" | tee "$out/partitions-$sched-1.txt"
done
grep -h '^select/' "$out"/*.txt
