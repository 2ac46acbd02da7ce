#!/usr/bin/env bash
# `srun -N2 -n3 cohort env --json` on the real cluster: uneven tasks (2,1) over two nodes, each rank
# printing its own view, then the same gathered over MPI (PMIx) with --all-ranks.
source "$(dirname "$0")/lib.sh"
# One file per task (srun -o %t): srun forwards output in 1 KiB pieces and interleaves the
# ranks' lines longer than that.
srun -N2 -n3 --mpi=pmix -o "$work/per-rank.%t.json" "$COHORT_BIN" env --json
cat "$work"/per-rank.?.json >"$work/per-rank.jsonl"
"$CHECK_ENV_VIEWS" "$work/per-rank.jsonl" --world 3 --launcher "slurm step" --hosts n1,n2
srun -N2 -n3 --mpi=pmix "$COHORT_BIN" env --json --all-ranks >"$work/all.json"
"$CHECK_ENV_VIEWS" "$work/all.json" --world 3 --launcher "slurm step" --hosts n1,n2
# PMIx tells Open MPI which Slurm node each rank is on, so MPI's shared-memory split sees 2 hosts.
grep -q '"hosts": 2,' "$work/all.json" || fail "MPI's node split does not match Slurm's 2 nodes"
srun -N2 -n3 --mpi=pmix "$COHORT_BIN" env --all-ranks | tee "$work/table.txt"
[ "$(grep -c 'slurm step' "$work/table.txt")" = 3 ] || fail "table does not list 3 ranks"
