#!/usr/bin/env bash
# The tiny GPT end to end: import the corpus as byte tokens (seq_len 64), split it, train on N
# ranks (default 2; srun in an allocation, mpirun elsewhere), report validation perplexity.
#   examples/gpt-tiny/run.sh [RANKS] [--set section.key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f data/corpus-val.h5 ]; then
  corpus=$(find /usr/share/common-licenses -maxdepth 1 -type f | sort)
  # shellcheck disable=SC2086
  "$cohort" data import text $corpus --seq-len 64 --out data/corpus.h5 >&2
  "$cohort" data split data/corpus.h5 --train data/corpus-train.h5 --val data/corpus-val.h5 \
    --val-fraction 0.1 >&2
fi
launch_train "$here/gpt-tiny.ini"
