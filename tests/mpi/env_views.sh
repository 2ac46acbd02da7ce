#!/usr/bin/env bash
# `cohort env --json` under mpirun -np 3: per rank (one JSON line each) or --all-ranks (gathered).
set -euo pipefail
mode=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
extra=()
[ "$mode" = all-ranks ] && extra=(--all-ranks)
dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT
if [ "$mode" = all-ranks ]; then
  # shellcheck disable=SC2086
  "$MPIEXEC" $MPIEXEC_FLAGS -np 3 "$COHORT_BIN" env --json "${extra[@]}" >"$out"
else
  # A file per rank: Open MPI 5's mpirun forwards output in 1 KiB pieces and interleaves the
  # ranks' lines longer than that.
  # shellcheck disable=SC2086,SC2016
  "$MPIEXEC" $MPIEXEC_FLAGS -np 3 bash -c '"$0" env --json >"$1/$OMPI_COMM_WORLD_RANK.json"' \
    "$COHORT_BIN" "$dir"
  cat "$dir"/?.json >"$out"
fi
"$CHECK_ENV_VIEWS" "$out" --world 3 --launcher "open mpi"
