#!/usr/bin/env bash
# `cohort env --json` under mpirun -np 3: per rank (one JSON line each) or --all-ranks (gathered).
set -euo pipefail
mode=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
extra=()
[ "$mode" = all-ranks ] && extra=(--all-ranks)
# shellcheck disable=SC2086
"$MPIEXEC" $MPIEXEC_FLAGS -np 3 "$COHORT_BIN" env --json "${extra[@]}" >"$out"
"$CHECK_ENV_VIEWS" "$out" --world 3 --launcher "open mpi"
