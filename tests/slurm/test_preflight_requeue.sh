#!/usr/bin/env bash
# Pre-flight node checks (issue 24), on the three-node cluster: sbatch/train.sbatch runs `cohort
# doctor` on every node before training (slurm.preflight=on in the script). Node n2 is made
# unhealthy with the documented fault switch (debug.doctor_fault=n2:run_dir): the doctor's report
# names it, `cohort supervise` excludes it and requeues the job (pre-flight requeue 1/2, counted
# in restarts.json) before any training step; the job comes back on n1 and n3, every node passes,
# and it trains to the end. Then `cohort doctor` by hand on the allocation: text, --json, and the
# exit status that names the failing check (80 run_dir, 81 dataset).
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
train_settings 1 1000 1000
job=$(sbatch --parsable --requeue --nodes=2 --job-name=preflight \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini preflight)" "${settings[@]}" \
  --set debug.doctor_fault=n2:run_dir)
state=$(wait_end "$job")
out=$work/preflight-$job.out
grep -v '^  ' "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
first=$(grep -n "^cohort-train: job $job on n\[1-2\], restart 0$" "$out" | cut -d: -f1)
[ -n "$first" ] || fail "the first run was not on n[1-2]"
grep -q "^pre-flight: rank 1 (node n2) faulty (pre-flight run_dir: failed by the fault switch debug.doctor_fault (n2:run_dir)); requeued job $job (pre-flight requeue 1/2), excluding n2; no checkpoint yet: the next run starts over$" "$out" ||
  fail "no pre-flight line excluding n2"
[ "$(grep -c '^step .*/85 epoch' "$out" || true)" -ge 1 ] || fail "the job never trained"
before=$(sed -n "1,/^cohort-train: job $job on n\[1,3\], restart 1$/p" "$out")
echo "$before" | grep -q "step ended" && fail "a training step ran before the requeue"
ran_without "$job" n2 "$out"
grep -q "^pre-flight: 2 node(s) ready$" "$out" || fail "the second run's nodes did not all pass"
grep -q '"preflight_requeues":1' preflight/restarts.json || fail "restarts.json: $(cat preflight/restarts.json)"
grep -q '"event":"end"' preflight/metrics.jsonl || fail "the training did not end"

# By hand, inside an allocation of the three nodes: every node checked, one task per node.
doctor() {
  salloc -N 3 -Q srun --mpi=pmix -N 3 --ntasks-per-node=1 cohort doctor \
    --set data.path="$work/set.h5" --set train.run_dir="$work/byhand" "$@"
}
rc=0
doctor >text.out 2>&1 || rc=$?
cat text.out
[ "$rc" = 0 ] || fail "doctor on healthy nodes exited $rc"
for n in n1 n2 n3; do
  grep -q "^$n  run_dir  pass" text.out || fail "no run_dir pass for $n"
  grep -q "^$n  clock    pass" text.out || fail "no clock pass for $n"
done
grep -q "^all nodes  network  pass  all-reduce of 16 MiB among 3 nodes" text.out || fail "no all-reduce"
grep -qx "doctor: 3 node(s) ready" text.out || fail "no ready line"
rc=0
doctor --json --set debug.doctor_fault=n3:run_dir >fault.json 2>doctor.err || rc=$?
[ "$rc" = 80 ] || fail "a failing run_dir exited $rc, not 80: $(cat doctor.err)"
/usr/bin/python3 - fault.json <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["exit_code"] == 80, report
assert [f["node"] for f in report["failed_nodes"]] == ["n3"], report["failed_nodes"]
assert [n["node"] for n in report["nodes"]] == ["n1", "n2", "n3"], report["nodes"]
PY
rc=0
doctor --set data.path="$work/missing.h5" >missing.out 2>&1 || rc=$?
[ "$rc" = 81 ] || fail "a missing dataset exited $rc, not 81"
grep -q "^doctor: failed: dataset (exit 81); n1; n2; n3$" missing.out || fail "$(cat missing.out)"
echo "pre-flight: n2 excluded before training, trained on n[1,3]; doctor exit codes 0/80/81"
