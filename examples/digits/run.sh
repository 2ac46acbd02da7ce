#!/usr/bin/env bash
# The digits example end to end: import the real data set, split it, train on N ranks (default 2),
# evaluate, print a summary. Under Slurm (inside an allocation) the ranks start with srun,
# anywhere else with mpirun: `cohort launch` picks.
#   examples/digits/run.sh [RANKS] [--set section.key=value ...]
# Works from any directory; data and the run directory go to the current one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f data/digits-val.h5 ]; then
  "$cohort" data import digits --out data/digits.h5 >&2
  "$cohort" data split data/digits.h5 --train data/digits-train.h5 --val data/digits-val.h5 \
    --val-fraction 0.2 --seed 0 >&2
fi
launch_train "$here/digits.ini"
