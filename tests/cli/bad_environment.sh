#!/usr/bin/env bash
# Bad job environments: `cohort env` exits 2 with one `cohort: error:` line naming the variable,
# and never starts MPI or falls back to one process. Two parts, two tests (tests/cli/CMakeLists.txt):
#   main        (cli.bad_environment) everything below but the rendezvous's own errors; under
#               Open MPI 5, the refusal of a torchrun-style start there;
#   rendezvous  (cli.bad_environment.rendezvous) the errors of the torchrun-style rendezvous
#               itself (rank 0 unreachable: exit 77; a bad COHORT_RENDEZVOUS_TIMEOUT_S), reached
#               only with Open MPI 4's ompi-server: under Open MPI 5 it skips (exit 79).
set -uo pipefail
bin=$1 part=${2:-main}
case $part in main|rendezvous) ;; *) echo "bad_environment.sh: part '$part' is not main or rendezvous" >&2; exit 2 ;; esac
# Open MPI's major release: "mpirun (Open MPI) 4.1.4".
ompi_major=$(mpirun --version | sed -n '1s/^[^0-9]*\([0-9][0-9]*\).*/\1/p')
[ -n "$ompi_major" ] || { echo "FAIL: no Open MPI release in 'mpirun --version'"; exit 1; }
check() {
  local want=$1; shift
  local err rc
  err=$(env -i PATH="$PATH" "$@" "$bin" env 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: $* -> exit $rc (want 2): $err"; exit 1; }
  echo "$err" | grep -q "^cohort: error: .*$want" || { echo "FAIL: $* -> '$err' lacks '$want'"; exit 1; }
  echo "ok: $* -> $(echo "$err" | tail -1)"
}
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

if [ "$part" = rendezvous ]; then
  if [ "$ompi_major" -ge 5 ]; then
    echo "SKIP: Open MPI $ompi_major has no ompi-server: a torchrun-style start is refused before" \
      "the rendezvous's own errors (rank 0 unreachable, a bad timeout) can arise;" \
      "cli.bad_environment checks that refusal"
    exit 79
  fi
  torchrun_check 77 "cannot reach rank 0 at MASTER_ADDR=127.0.0.1 MASTER_PORT=9" RANK=1 WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=2
  torchrun_check 2 "COHORT_RENDEZVOUS_TIMEOUT_S='x'" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=x
  echo "the rendezvous's errors: rank 0 unreachable (exit 77), a bad timeout (exit 2)"
  exit 0
fi

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
torchrun_check 2 "needs MASTER_ADDR and MASTER_PORT" RANK=1 WORLD_SIZE=2
if [ "$ompi_major" -ge 5 ]; then
  # Open MPI 5 has no ompi-server: the rendezvous is refused before anything is waited for (the
  # rendezvous's own errors, Open MPI 4's, are cli.bad_environment.rendezvous).
  torchrun_check 2 "which Open MPI 5 no longer has" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=9 COHORT_RENDEZVOUS_TIMEOUT_S=2
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
