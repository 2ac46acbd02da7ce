#!/usr/bin/env bash
# examples/gpt-tiny end to end on 2 ranks: the validation loss, in nats per byte of text, must drop
# well below the unigram entropy of the corpus's bytes — what a byte model that ignores context
# can reach.
# TOKENS: bytes (default) or subword (GPT_TOKENS=subword: the example's SentencePiece variant).
set -euo pipefail
cohort=$1 work=$2 tokens=${3:-bytes}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
GPT_TOKENS=$tokens COHORT=$cohort bash "$(dirname "$0")/../../examples/gpt-tiny/run.sh" 2 \
  --set train.log_every=0 --json >summary.json
TOKENS=$tokens /usr/bin/python3 - <<'PY'
import glob, json, os
import h5py, numpy as np
s = json.load(open("summary.json"))
loss = s["eval"]["loss"]  # nats per predicted token of the validation set
# The yardstick, for both variants: the unigram entropy of the corpus's bytes (what a byte model
# blind to context reaches), and the loss in nats per byte.
text = b"".join(open(f, "rb").read() for f in sorted(glob.glob("/usr/share/common-licenses/*"))
                if os.path.isfile(f))
counts = np.bincount(np.frombuffer(text, np.uint8)).astype(float)
p = counts[counts > 0] / counts.sum()
entropy = float(-(p * np.log(p)).sum())
if os.environ["TOKENS"] == "bytes":
    per_byte = loss
else:  # a subword token stands for the bytes it decodes to (its line's newline for the eos)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file="data/licences.model")
    with h5py.File("data/corpus-subword-val.h5") as f:
        ids = f["tokens"][:].astype(int).tolist()
    pieces = len(ids) - 1  # the predicted ones
    nbytes = sum(len(sp.decode([i]).encode()) + (1 if i == sp.eos_id() else 0) for i in ids[1:])
    per_byte = loss * pieces / nbytes
    print(f"subword: {pieces} validation tokens stand for {nbytes} bytes "
          f"({nbytes / pieces:.2f} bytes per token); {loss:.3f} nats/token")
print(f"gpt-tiny ({os.environ['TOKENS']}), {s['ranks']} ranks, {s['steps']} steps in "
      f"{s['seconds']:.0f} s: validation loss {per_byte:.3f} nats/byte (perplexity per token "
      f"{s['eval']['perplexity']:.2f}) against a unigram byte entropy of {entropy:.3f}: "
      f"{per_byte / entropy:.2f} of it")
assert per_byte < 0.8 * entropy, f"{per_byte} nats/byte not well below the unigram entropy {entropy}"
PY
