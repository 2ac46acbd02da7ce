#!/usr/bin/env bash
# The diabetes regression example end to end: import scikit-learn's bundled data set, split it,
# train on N ranks (default 2), evaluate (mse, mae, r2), print a summary. Under Slurm the ranks
# start with srun, anywhere else with mpirun: `cohort launch` picks.
#   examples/diabetes/run.sh [RANKS] [--set section.key=value ...]
# Works from any directory; data and the run directory go to the current one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f data/diabetes-val.h5 ]; then
  "$cohort" data import diabetes --out data/diabetes.h5 >&2
  "$cohort" data split data/diabetes.h5 --train data/diabetes-train.h5 \
    --val data/diabetes-val.h5 --val-fraction 0.2 --seed 0 >&2
fi
launch_train "$here/diabetes.ini"
