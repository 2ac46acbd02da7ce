#!/usr/bin/env bash
# salloc: the allocation's shell is one process ("salloc shell"), srun inside it is a 2-rank step.
source "$(dirname "$0")/lib.sh"
salloc -N2 -n2 bash -c "'$COHORT_BIN' env --json >$work/shell.json && \
  srun --mpi=pmix -o '$work/step.%t.json' '$COHORT_BIN' env --json && cat $work/step.?.json >$work/step.jsonl"
"$CHECK_ENV_VIEWS" "$work/shell.json" --world 1 --launcher "salloc shell" --hosts n1,n2
"$CHECK_ENV_VIEWS" "$work/step.jsonl" --world 2 --launcher "slurm step" --hosts n1,n2
