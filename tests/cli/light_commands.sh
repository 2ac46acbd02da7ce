#!/usr/bin/env bash
# The light commands never map LibTorch and never start MPI; the LibTorch ones still run (in
# cohort-torch) and do map it. Each command runs with a preloaded helper that copies its
# /proc/self/maps at exit; a run that trained and saved a checkpoint gives them something to read.
set -euo pipefail
cohort=$1 maps_helper=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# cohort does not even reference MPI's initialisation (HDF5 links libmpi; only cohort-torch starts it).
if nm -D --undefined-only "$cohort" | grep -qE " (P?MPI_Init|MPI_Init_thread)\b"; then
  fail "cohort references MPI_Init"
fi

"$cohort" data make-synthetic --samples 256 --features 8 --classes 3 --out set.h5 >/dev/null
"$cohort" train --set data.path=set.h5 --set train.max_steps=4 --set train.log_every=0 \
  --set checkpoint.every_steps=2 --set train.run_dir=run >train.log 2>&1 ||
  { cat train.log >&2; fail "training the fixture run"; }

# maps_of NAME CMD...: runs `cohort CMD...` with the helper, leaves its maps in NAME.maps.
maps_of() {
  local name=$1; shift
  # A sanitized build (COHORT_SANITIZER) wants its runtime first among the libraries; the helper
  # preloaded before it is harmless (it only reads /proc/self/maps at exit), so the order check
  # is off for these runs.
  COHORT_TEST_MAPS="$work/$name.maps" LD_PRELOAD="$maps_helper" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$cohort" "$@" \
    >"$name.out" 2>&1 ||
    { cat "$name.out" >&2; fail "cohort $* -> exit $?"; }
  [ -s "$name.maps" ] || fail "cohort $*: no maps written"
}
torch_re='/lib(torch|torch_cpu|c10)\.so'
light=0
check_light() {
  local name=$1; shift
  maps_of "$name" "$@"
  if grep -qE "$torch_re" "$name.maps"; then fail "cohort $* mapped LibTorch: $(grep -m1 -oE "/[^ ]*$torch_re" "$name.maps")"; fi
  light=$((light + 1))
}
check_light version --version
check_light help help
check_light config config check run/config.resolved.ini
check_light ckpt_list ckpt list run/checkpoints
check_light ckpt_inspect ckpt inspect run/checkpoints --json
check_light ckpt_verify ckpt verify run/checkpoints
check_light data_inspect data inspect set.h5 --batch-size 16 --ranks 2
check_light report report run -o report.html
check_light top top run --once
check_light submit submit --dry-run --config run/config.resolved.ini
check_light data_help data --help
# The control: a LibTorch command run through cohort does map it (so the check above can fail).
maps_of env env --json
grep -qE "$torch_re" env.maps || fail "cohort env did not map LibTorch: the check is blind"
maps_of export ckpt export run/checkpoints -o model.pt
[ -s model.pt ] || fail "ckpt export wrote nothing"
# A cohort without its cohort-torch (a broken installation) says so in one line, exit 2.
mkdir -p alone && cp "$cohort" alone/cohort
set +e
err=$(alone/cohort env 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] && [[ $err == "cohort: error: "*"/alone/cohort-torch: cannot run the LibTorch part of cohort"* ]] ||
  fail "cohort without cohort-torch -> exit $rc: $err"
echo "OK: $light light commands mapped no LibTorch; env and ckpt export ran in cohort-torch and did"
