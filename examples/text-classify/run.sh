#!/usr/bin/env bash
# Text classification end to end: which licence is a sentence from? Sentences of five licence
# texts (make_sentences.py states the rule), a SentencePiece vocabulary of 1,000 trained on them,
# `cohort data import labelled-text` (ragged token ids + a label), a 80/20 split, then the
# fields_mlp model (a bag of embeddings over the mask) on N ranks (default 2), batches bucketed
# by length.
#   examples/text-classify/run.sh [RANKS] [--set section.key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -f data/sentences-val.h5 ]; then
  /usr/bin/python3 "$here/make_sentences.py" data/sentences.tsv
  cut -f2 data/sentences.tsv >data/sentences.txt  # the tokenizer learns from the text alone
  "$cohort" data tokenizer train data/sentences.txt --vocab 1000 --out data/sentences.model >&2
  "$cohort" data import labelled-text data/sentences.tsv --tokenizer data/sentences.model \
    --out data/sentences.h5 >&2
  "$cohort" data split data/sentences.h5 --train data/sentences-train.h5 \
    --val data/sentences-val.h5 --val-fraction 0.2 >&2
fi
launch_train "$here/text-classify.ini"
