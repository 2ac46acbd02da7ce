#!/usr/bin/env bash
# A real sbatch job: the batch script itself is one process; srun inside it and mpirun inside it
# both give 4 consistent ranks over 2 nodes, with the job's metadata.
source "$(dirname "$0")/lib.sh"
cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o $work/job.out
set -e
"$COHORT_BIN" env --json >$work/batch.json
srun --mpi=pmix -o $work/step.%t.json "$COHORT_BIN" env --json  # a file per task, as below
cat $work/step.?.json >$work/step.jsonl
# Each rank writes its own file: Open MPI 5's mpirun forwards output in 1 KiB pieces and
# interleaves ranks' lines longer than that.
"$MPIEXEC" $MPIEXEC_FLAGS bash -c '"\$0" env --json >$work/mpirun.\$OMPI_COMM_WORLD_RANK.json' "$COHORT_BIN"
cat $work/mpirun.?.json >$work/mpirun.jsonl
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
# Versions really loaded: the batch script (rank 0 of a job) asks slurmctld for its release, which
# is this cluster's Slurm, and finds libslurm within Slurm's RPC window.
controller=$(scontrol --version | awk '{print $2}')
grep -q "\"controller\":\"$controller\"" "$work/batch.json" \
  || fail "cohort env does not report slurmctld $controller: $(grep -o '"libslurm":{[^}]*}' "$work/batch.json")"
grep -q '"rpc_window":"ok"' "$work/batch.json" || fail "libslurm and slurmctld $controller not found compatible"
grep -q '"hdf5":{"version":"1\.[0-9]*\.[0-9]*"}' "$work/batch.json" || fail "no HDF5 version in cohort env"
echo "cohort env reports slurmctld $controller, within the RPC window"
