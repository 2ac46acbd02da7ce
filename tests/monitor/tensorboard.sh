#!/usr/bin/env bash
# TensorBoard event files (monitor.tensorboard_dir) on 2 real ranks, decoded by an independent
# reader (tensorboard_check.py: its own CRC-32C and framing, the Event/Summary messages built from
# the published field numbers through Debian's Python protobuf, nothing of Cohort's):
#  - a run with an evaluation every 10 steps and a summary every 10 dies at step 27 (rank 1's
#    injected device fault, exit 78) after its checkpoint at 20; the same command again resumes
#    from 20 and ends at 40: the scalars hold every step 1..40 exactly once (steps 21..26 of the
#    first start were cut), each loss equal to metrics.jsonl's, evaluations at 10, 20, 30, 40
#    once each, summaries (throughput) likewise, and the step-time phases and lr are there;
#  - garbage appended to an event file (a torn write) is cut at the next start, which goes on to
#    step 50: the files read, steps 1..50 once each;
#  - at that start, a link with this run's event file name to a file outside the run, and a file
#    of such a name that holds no event record, are left as they were, each with a warning; and
#    another run's event file in the same directory (a shared monitor.tensorboard_dir: its own run
#    tag), torn as well, is not cut.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
"$cohort" data split set.h5 --train train.h5 --val val.h5 --val-fraction 0.1 >/dev/null
run() {
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=train.h5 --set data.val_path=val.h5 \
    --set data.batch_size=32 --set train.max_steps=40 --set train.run_dir=tb-run \
    --set checkpoint.every_steps=10 --set train.eval_every=10 --set monitor.summary_every=10 \
    --set monitor.tensorboard_dir=tb "$@"
}
rc=0
run --set debug.device_fault_step=27 --set debug.device_fault_rank=1 >first.log 2>&1 || rc=$?
[ "$rc" = 78 ] || fail "the first start exited $rc, not 78: $(cat first.log)"
run >second.log 2>&1 || fail "the resumed start failed: $(cat second.log)"
grep -q "resumed from .*step-00000020" second.log || fail "did not resume from step 20"
[ "$(ls tb-run/tb | wc -l)" = 2 ] || fail "not one event file per start: $(ls tb-run/tb)"
/usr/bin/python3 "$here/tensorboard_check.py" tb-run/tb tb-run/metrics.jsonl 40 10 ||
  fail "the event files do not hold the run"
last=$(ls -d tb-run/tb/* | tail -1)
tag=$(basename "$last" .cohort); tag=${tag##*.}  # the run's tag, the name's last field
[[ "$tag" =~ ^[0-9a-f]{8}$ ]] || fail "no run tag in the event file's name: $last"
other=tb-run/tb/events.out.tfevents.3.other.3.0badc0de.cohort  # another run's, torn too
cp "$last" "$other" && printf "torn write" >>"$other"
printf "torn write" >>"$last"
printf "a user's own file\n" >outside.txt
ln -s "$PWD/outside.txt" tb-run/tb/events.out.tfevents.1.link.1.$tag.cohort
printf "not an event file, no record" >tb-run/tb/events.out.tfevents.2.foreign.2.$tag.cohort
sums=$(md5sum outside.txt tb-run/tb/events.out.tfevents.2.foreign.2.$tag.cohort "$other")
run --set train.max_steps=50 >third.log 2>&1 || fail "a start after a torn write failed: $(cat third.log)"
[ "$(md5sum outside.txt tb-run/tb/events.out.tfevents.2.foreign.2.$tag.cohort "$other")" = "$sums" ] ||
  fail "a file that is not this run's event file was changed"
grep -q "warning: .*link.1.$tag.cohort: a symbolic link, not an event file of this run: left alone" \
  third.log && grep -q "warning: .*foreign.2.$tag.cohort: not an event file (no event record)" third.log ||
  fail "no warning for the link or the foreign file: $(cat third.log)"
rm tb-run/tb/events.out.tfevents.1.link.1.$tag.cohort tb-run/tb/events.out.tfevents.2.foreign.2.$tag.cohort \
  "$other"
/usr/bin/python3 "$here/tensorboard_check.py" tb-run/tb tb-run/metrics.jsonl 50 10 ||
  fail "the torn record was not cut"
echo "tensorboard: steps 1..40 once each across a fault and a resume; a torn record cut, on to 50"
