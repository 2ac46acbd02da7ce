#!/usr/bin/env bash
# examples/k8s/cohort-job.yaml does not rot: its training config passes `cohort config check`, and
# its pods get the variables the Indexed Job launcher and the rendezvous read.
set -euo pipefail
bin=$1 manifest=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The ConfigMap's train.ini block (indented by 4 under "train.ini: |").
awk '/train.ini: \|/ {on=1; next} on && /^    / {print substr($0, 5); next} on {exit}' "$manifest" \
  >"$work/train.ini"
[ -s "$work/train.ini" ] || { echo "FAIL: no train.ini in $manifest" >&2; exit 1; }
"$bin" config check "$work/train.ini"
for name in WORLD_SIZE MASTER_ADDR MASTER_PORT COHORT_RENDEZVOUS_TIMEOUT_S; do
  grep -q "name: $name\$" "$manifest" || { echo "FAIL: the pods get no $name" >&2; exit 1; }
done
grep -q "completionMode: Indexed" "$manifest" && grep -q "clusterIP: None" "$manifest" ||
  { echo "FAIL: not an Indexed Job with a headless Service" >&2; exit 1; }
echo "k8s manifest: config valid, rendezvous variables present"
