#!/usr/bin/env bash
# The tiny GPT end to end: import the corpus as byte tokens (or, GPT_TOKENS=subword, as a
# SentencePiece vocabulary trained on it; seq_len 64), split it, train on N ranks (default 2; srun
# in an allocation, mpirun elsewhere), report validation perplexity.
#   examples/gpt-tiny/run.sh [RANKS] [--set section.key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
# GPT_TOKENS=subword: a SentencePiece BPE vocabulary of 2,000 trained on the same corpus instead.
tokens=${GPT_TOKENS:-bytes}
case $tokens in
  bytes) name=corpus tokenizer=() ;;
  subword) name=corpus-subword tokenizer=(--tokenizer data/licences.model)
    train_args=(--set "data.path=data/$name-train.h5" --set "data.val_path=data/$name-val.h5"
                --set train.run_dir=runs/gpt-tiny-subword "${train_args[@]}") ;;
  *) echo "GPT_TOKENS is bytes or subword, not '$tokens'" >&2; exit 2 ;;
esac
if [ ! -f "data/$name-val.h5" ]; then
  corpus=$(find /usr/share/common-licenses -maxdepth 1 -type f | sort)
  if [ "$tokens" = subword ]; then
    # shellcheck disable=SC2086
    "$cohort" data tokenizer train $corpus --vocab 2000 --out data/licences.model >&2
  fi
  # shellcheck disable=SC2086
  "$cohort" data import text $corpus "${tokenizer[@]}" --seq-len 64 --out "data/$name.h5" >&2
  "$cohort" data split "data/$name.h5" --train "data/$name-train.h5" --val "data/$name-val.h5" \
    --val-fraction 0.1 >&2
fi
launch_train "$here/gpt-tiny.ini"
