#!/usr/bin/env bash
# The synthetic-image CNN end to end: make 9 000 images, split 8 000 / 1 000, train on N
# ranks (default 2), evaluate.   examples/cnn-synthetic/run.sh [RANKS] [--set k=v ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f data/images-val.h5 ]; then
  "$cohort" data make-synthetic --kind images --samples 9000 --seed 1 --out data/images.h5 >&2
  "$cohort" data split data/images.h5 --train data/images-train.h5 --val data/images-val.h5 \
    --val-fraction 0.1111 --seed 0 >&2
fi
launch_train "$here/cnn-synthetic.ini"
