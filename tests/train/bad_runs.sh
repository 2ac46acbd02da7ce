#!/usr/bin/env bash
# A diverging run stops on every rank at the same step with exit code 4 and a message naming the
# step; a bad config stops before MPI starts, naming file, line and the nearest key (exit 2); a
# rank whose peer does not join MPI's start-up within parallel.timeout_s ends with the watchdog's
# code 76 and a line saying so, instead of waiting forever (debug.start_delay_rank: rank 1 starts
# 120 s late).
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --samples 512 --features 8 --classes 3 --out set.h5 >/dev/null
set +e
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set optim.lr=1e30 \
  --set train.log_every=0 --set train.run_dir=run >out.log 2>err.log
rc=$?
set -e
[ "$rc" = 4 ] || { cat err.log >&2; fail "diverging run: exit $rc, expected 4"; }
grep -q "training diverged at step [0-9]*: the loss is" err.log || fail "no divergence message"
[ "$(grep -c 'training diverged at step' err.log)" = 2 ] || fail "expected both ranks to stop"
steps=$(grep -o 'diverged at step [0-9]*' err.log | sort -u | wc -l)
[ "$steps" = 1 ] || fail "the ranks stopped at different steps"
printf '[optim]\nlr = 0.1\n\n[data]\nbatchsize = 32\n' >bad.ini
set +e
err=$("$cohort" train --config bad.ini 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" = 2 ] || fail "bad config: exit $rc, expected 2"
[ "$err" = "cohort: error: bad.ini:5: data.batchsize: unknown key; did you mean 'data.batch_size'?" ] \
  || fail "bad config message: $err"
start=$(date +%s)
set +e
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set train.run_dir=late \
  --set parallel.timeout_s=5 --set debug.start_delay_rank=1 --set debug.start_delay_s=120 \
  >late.log 2>&1
rc=$?
set -e
took=$(($(date +%s) - start))
[ "$rc" = 76 ] || { cat late.log >&2; fail "a peer that never joined: exit $rc, expected 76"; }
grep -q "^cohort: watchdog: rank 0: MPI start-up not done after 5 s (parallel.timeout_s): a peer rank never joined" late.log ||
  fail "no start-up watchdog line: $(cat late.log)"
[ "$took" -lt 100 ] || fail "the start-up watchdog took $took s (timeout 5 s)"
echo "OK: $(grep -m1 -o 'training diverged at step [0-9]*' err.log) on both ranks (exit 4); $err;" \
  "a peer that never joined: exit 76 after $took s"
