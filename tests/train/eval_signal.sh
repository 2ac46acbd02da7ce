#!/usr/bin/env bash
# A signal in the middle of a long evaluation (issue 24) is acted on within one evaluation batch:
# 2 ranks, an evaluation at step 10 of 40 batches per rank, each read slowed to 200 ms
# (debug.data_delay_ms: a slow filesystem), so the evaluation takes 8 s or more. SIGUSR1 to one
# rank about a second into it: both ranks agree at the next batch, abandon the evaluation (said,
# and an "eval_abandoned" record), checkpoint step 10 and exit 75 -- within 4 s of the signal
# (the bound: one batch read, one forward, one agreement, the checkpoint; 4 s leaves margin on a
# loaded machine, and is half of what the evaluation alone would take). The restart resumes from
# step 10 and finishes.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind classification --samples 2048 --features 64 --classes 5 \
  --seed 4 --out train.h5 >/dev/null
"$cohort" data make-synthetic --kind classification --samples 1280 --features 64 --classes 5 \
  --seed 5 --out val.h5 >/dev/null
train() {
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=train.h5 --set data.val_path=val.h5 \
    --set data.batch_size=16 --set train.max_steps=20 --set train.eval_every=10 \
    --set checkpoint.every_steps=10 --set train.run_dir=run "$@"
}
train --set debug.data_delay_ms=200 >first.log 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  [ -f run/checkpoints/latest ] && break
  sleep 0.1
done
[ "$(cat run/checkpoints/latest 2>/dev/null)" = step-00000010 ] || fail "no checkpoint at step 10: $(cat first.log)"
sleep 1  # the evaluation at step 10 has begun: it follows the checkpoint
signalled=$(date +%s.%N)
pgrep -f "^$cohort train .*train.run_dir=run( |$)" | tail -1 | xargs kill -USR1
rc=0
wait "$launcher" || rc=$?
ended=$(date +%s.%N)
cat first.log
[ "$rc" = 75 ] || fail "exited $rc after SIGUSR1 during the evaluation, not 75"
grep -q "^eval  step 10: abandoned for SIGUSR1$" first.log || fail "the evaluation was not abandoned"
grep -q "^SIGUSR1 at step 10: checkpoint saved" first.log || fail "no stop at step 10"
grep -q '"event":"eval_abandoned","signal":"SIGUSR1","step":10' run/metrics.jsonl || fail "no eval_abandoned record"
/usr/bin/python3 -c "import sys; d = float(sys.argv[2]) - float(sys.argv[1]); print(f'signal to exit: {d:.2f} s'); sys.exit(0 if d < 4 else 1)" \
  "$signalled" "$ended" || fail "the run took 4 s or more to stop after the signal"
train >second.log 2>&1 || fail "the restart failed: $(cat second.log)"
grep -q "resumed from .*step-00000010" second.log || fail "did not resume from step 10"
grep -q "^eval  step 20: " second.log || fail "no evaluation at step 20 after the restart"
echo "SIGUSR1 during a long evaluation: stopped within the bound, resumed"
