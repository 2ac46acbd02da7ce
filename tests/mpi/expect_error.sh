# Sourced by the mpi test scripts: expect "MESSAGE" ARGS... runs `$cohort train` (one process)
# with ARGS and passes when it exits 2 with MESSAGE on its one `cohort: error:` line.
expect() {
  local message=$1 rc=0
  shift
  "$cohort" train --set train.run_dir=bad --set train.max_steps=1 "$@" >bad.log 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc, wanted 2: $*"; cat bad.log; exit 1; }
  grep -q "^cohort: error: .*$message" bad.log || { echo "no '$message':"; cat bad.log; exit 1; }
  echo "ok: $(grep -m1 '^cohort: error' bad.log)"
}
