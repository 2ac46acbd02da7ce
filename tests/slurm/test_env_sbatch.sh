#!/usr/bin/env bash
# A real sbatch job: the batch script itself is one process; srun inside it and mpirun inside it
# both give 4 consistent ranks over 2 nodes, with the job's metadata.
source "$(dirname "$0")/lib.sh"
cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o $work/job.out
set -e
"$COHORT_BIN" env --json >$work/batch.json
srun --mpi=pmix "$COHORT_BIN" env --json >$work/step.jsonl
"$MPIEXEC" $MPIEXEC_FLAGS "$COHORT_BIN" env --json >$work/mpirun.jsonl
"$COHORT_BIN" launch -n 3 -- "$COHORT_BIN" env --json --all-ranks >$work/launch.json
JOB
submit_wait "$work/job.sh" >/dev/null || { cat "$work/job.out" >&2; fail "the batch job failed"; }
"$CHECK_ENV_VIEWS" "$work/batch.json" --world 1 --launcher "slurm batch script" --hosts n1,n2
"$CHECK_ENV_VIEWS" "$work/step.jsonl" --world 4 --launcher "slurm step" --hosts n1,n2
"$CHECK_ENV_VIEWS" "$work/mpirun.jsonl" --world 4 --launcher "open mpi" --hosts n1,n2
"$CHECK_ENV_VIEWS" "$work/launch.json" --world 3 --launcher "slurm step" --hosts n1,n2
job=$(grep -o '"job_id":"[0-9]*"' "$work/batch.json" | head -1)
[ "$(grep -c "$job" "$work/step.jsonl")" = 4 ] || fail "srun ranks do not carry the batch job id $job"
[ "$(grep -c "$job" "$work/mpirun.jsonl")" = 4 ] || fail "mpirun ranks do not carry the batch job id $job"
