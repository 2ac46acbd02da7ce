#!/usr/bin/env bash
# Bad job environments: `cohort env` exits 2 with one `cohort: error:` line naming the variable,
# and never starts MPI or falls back to one process.
set -uo pipefail
bin=$1
check() {
  local want=$1; shift
  local err rc
  err=$(env -i PATH="$PATH" "$@" "$bin" env 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: $* -> exit $rc (want 2): $err"; exit 1; }
  echo "$err" | grep -q "^cohort: error: .*$want" || { echo "FAIL: $* -> '$err' lacks '$want'"; exit 1; }
  echo "ok: $* -> $(echo "$err" | tail -1)"
}
step="SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n[1-2] SLURM_STEP_TASKS_PER_NODE=1(x2) SLURM_NODEID=0 SLURM_LOCALID=0"
# shellcheck disable=SC2086
check "SLURM_PROCID='x'" $step SLURM_PROCID=x
# shellcheck disable=SC2086
check "PMIX_RANK=1" $step SLURM_PROCID=0 PMIX_RANK=1
check "SLURM_STEP_NODELIST='n\[1-2'" SLURM_JOB_ID=9 SLURM_STEP_ID=0 'SLURM_STEP_NODELIST=n[1-2' SLURM_PROCID=0 SLURM_NODEID=0 SLURM_LOCALID=0 SLURM_NTASKS=1
# Values that expand or overflow (issue: hostile input): refused before anything is allocated.
check "names more than the limit" SLURM_JOB_ID=9 SLURM_STEP_ID=0 'SLURM_STEP_NODELIST=n[0-999999999]' SLURM_PROCID=0 SLURM_NODEID=0 SLURM_LOCALID=0 SLURM_NTASKS=1
check "sums to 1999999998 tasks" SLURM_JOB_ID=9 SLURM_STEP_ID=0 'SLURM_STEP_NODELIST=n[1-2]' SLURM_STEP_TASKS_PER_NODE=999999999,999999999 SLURM_PROCID=0 SLURM_NODEID=0 SLURM_LOCALID=0
err=$("$bin" env --parallel pipeline=65536,tensor=65536 --world 8 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && echo "$err" | grep -q "not divisible" || { echo "FAIL: pipeline x tensor overflow -> exit $rc: $err"; exit 1; }
echo "ok: pipeline x tensor = 2^32 -> $err"
check "OMPI_COMM_WORLD_SIZE" OMPI_COMM_WORLD_RANK=0
check "WORLD_SIZE" RANK=3
# torchrun-style processes started apart meet at MASTER_ADDR:MASTER_PORT: without it, or when
# rank 0 never comes (COHORT_RENDEZVOUS_TIMEOUT_S), one line and a non-zero exit, no hang.
torchrun_check() {
  local want_rc=$1 want=$2; shift 2
  local err rc
  err=$(env -i PATH="$PATH" "$@" timeout 60 "$bin" env 2>&1 >/dev/null); rc=$?
  [ "$rc" = "$want_rc" ] || { echo "FAIL: $* -> exit $rc (want $want_rc): $err"; exit 1; }
  echo "$err" | grep -q "^cohort: error: .*$want" || { echo "FAIL: $* -> '$err' lacks '$want'"; exit 1; }
  echo "ok: $* -> $(echo "$err" | grep '^cohort: error' | tail -1)"
}
torchrun_check 2 "needs MASTER_ADDR and MASTER_PORT" RANK=1 WORLD_SIZE=2
if [ "$(mpirun --version | grep -o '[0-9]*' | head -1)" -ge 5 ]; then
  # Open MPI 5 has no ompi-server: the rendezvous is refused before anything is waited for.
  torchrun_check 2 "which Open MPI 5 no longer has" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=2
else
  torchrun_check 77 "cannot reach rank 0 at MASTER_ADDR=127.0.0.1 MASTER_PORT=9" RANK=1 WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=2
  torchrun_check 2 "COHORT_RENDEZVOUS_TIMEOUT_S='x'" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=x
fi
# A bad option is a usage error too.
out=$("$bin" env --no-such-option 2>&1); rc=$?
[ "$rc" = 2 ] || { echo "FAIL: unknown option -> exit $rc: $out"; exit 1; }
out=$("$bin" no-such-command 2>&1); rc=$?
[ "$rc" = 2 ] || { echo "FAIL: unknown command -> exit $rc: $out"; exit 1; }
# Every error, Boost's option errors included, is one `cohort: error:` line (docs/exit-codes.md),
# and text from outside in it (here an option and a path a user typed, with a terminal escape, a
# newline and bytes that are not UTF-8) reaches the terminal printable, on that one line.
out=$("$bin" env $'--bad-\e[31m-option' 2>&1); rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | grep -c '^cohort: error: ')" = 1 ] ||
  { echo "FAIL: a bad option -> exit $rc, not one 'cohort: error:' line: $out"; exit 1; }
out=$("$bin" data inspect $'evil\e]0;title\a\nnext\xff.h5' 2>&1); rc=$?
lines=$(printf '%s\n' "$out" | wc -l)
if [ "$rc" != 3 ] || [ "$lines" != 1 ] || printf '%s' "$out" | grep -q $'\e' ||
   ! printf '%s' "$out" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1; then
  echo "FAIL: an outside path in an error -> exit $rc, $lines line(s), not printable: $(printf '%q' "$out")"
  exit 1
fi
echo "all bad environments rejected"
