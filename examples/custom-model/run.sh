#!/usr/bin/env bash
# The custom model end to end: build gated_mlp.cpp against the installed Cohort (once, into
# ./build/custom-model), import and split the digits, train on N ranks (default 2).
#   examples/custom-model/run.sh [RANKS] [--set section.key=value ...]
# Needs an installed Cohort that CMake finds (`module load cohort` sets CMAKE_PREFIX_PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f build/custom-model/libgated_mlp.so ]; then
  cmake -S "$here" -B build/custom-model >&2
  cmake --build build/custom-model >&2
fi
if [ ! -f data/digits-val.h5 ]; then
  "$cohort" data import digits --out data/digits.h5 >&2
  "$cohort" data split data/digits.h5 --train data/digits-train.h5 --val data/digits-val.h5 \
    --val-fraction 0.2 --seed 0 >&2
fi
launch_train "$here/custom-model.ini"
