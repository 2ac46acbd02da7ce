#!/usr/bin/env bash
# Fashion-MNIST end to end: import the train and test splits from Debian's dataset-fashion-mnist,
# train the CNN on N ranks (default 2; srun in an allocation, mpirun elsewhere), evaluate on the
# test split.   examples/fashion-mnist/run.sh [RANKS] [--set section.key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
for split in train test; do
  if [ ! -f "data/fashion-mnist-$split.h5" ]; then
    "$cohort" data import fashion-mnist --split "$split" --out "data/fashion-mnist-$split.h5" >&2
  fi
done
launch_train "$here/fashion-mnist.ini"
