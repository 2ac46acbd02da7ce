#!/usr/bin/env bash
# FLOPs, MFU and tokens/s of the GPT on 2 ranks: the run record's flops_per_sample equals PaLM's
# estimate computed here from the config and the parameter count (6 N + 12 L W T per token, N
# without the position table), and every summary's model FLOP/s, MFU (monitor.peak_tflops) and
# tokens/s follow from its samples/s. An MLP has no FLOP count: its figures stay 0.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind tokens --tokens 40000 --vocab 64 --seq-len 32 --seed 2 \
  --out tokens.h5 >/dev/null
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=tokens.h5 --set data.batch_size=8 \
  --set model.name=gpt --set model.width=32 --set model.heads=2 --set model.blocks=2 \
  --set model.context=32 --set optim.name=adamw --set optim.lr=0.001 --set train.max_steps=40 \
  --set train.log_every=0 --set train.run_dir=gpt --set monitor.summary_every=10 \
  --set monitor.peak_tflops=0.5 >gpt.log 2>&1 || fail "gpt run: $(cat gpt.log)"
/usr/bin/python3 - <<'PY' || fail "FLOP accounting"
import json, math
recs = [json.loads(l) for l in open("gpt/metrics.jsonl")]
run = recs[0]
W, L, T, context = 32, 2, 32, 32
n = run["parameters"] - context * W  # without the position table
expected = T * (6 * n + 12 * L * W * T)
assert math.isclose(run["flops_per_sample"], expected, rel_tol=1e-12), (run["flops_per_sample"], expected)
sums = [r for r in recs if r["event"] == "summary"]
assert len(sums) == 4, len(sums)
for s in sums:
    assert s["model_flops_per_s"] > 0
    assert math.isclose(s["model_flops_per_s"], expected * s["samples_per_s"], rel_tol=1e-9), s
    assert math.isclose(s["mfu"], s["model_flops_per_s"] / (0.5e12 * 2), rel_tol=1e-9), s
    assert math.isclose(s["tokens_per_s"], T * s["samples_per_s"], rel_tol=1e-9), s
steps = [r for r in recs if r["event"] == "step"]
assert all(r["tokens"] == r["samples"] * T for r in steps)
print(f"gpt: {expected / 1e6:.2f} MFLOP per sample, MFU {sums[-1]['mfu']:.2e} at "
      f"{sums[-1]['tokens_per_s']:.0f} tokens/s")
PY
grep -q '^cohort_mfu{' gpt/metrics.prom || fail "no cohort_mfu in metrics.prom"
"$cohort" data make-synthetic --kind classification --samples 512 --features 16 --classes 4 \
  --out set.h5 >/dev/null
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set data.batch_size=16 \
  --set train.log_every=0 --set train.run_dir=mlp --set monitor.summary_every=4 \
  --set monitor.peak_tflops=0.5 >mlp.log 2>&1 || fail "mlp run: $(cat mlp.log)"
grep -q '"flops_per_sample":0' mlp/metrics.jsonl || fail "the MLP claims a FLOP count"
grep -q '^cohort_mfu{' mlp/metrics.prom && fail "the MLP has an MFU gauge"
echo "flops: ok"
