# Shared by the watchdog tests: watchdog_run NP PROGRAM MARKER runs PROGRAM on NP ranks, prints
# its stderr and sets `err` (the file), `rc` (the job's exit code) and `elapsed` (whole seconds
# from the time the program printed after "MARKER at " to the end of the job). MPI start-up under
# a loaded machine takes seconds, so the programs print that time when the clock starts.
watchdog_run() {
  local np=$1 program=$2 marker=$3 started end
  err=$(mktemp)
  trap 'rm -f "$err"' EXIT
  # shellcheck disable=SC2086
  "$MPIEXEC" $MPIEXEC_FLAGS -np "$np" "$program" 2>"$err" >/dev/null
  rc=$?
  end=$(date +%s.%N)
  cat "$err"
  started=$(grep -ao "$marker at [0-9.]*" "$err" | head -1 | awk '{print $NF}')
  [ -n "$started" ] || { echo "FAIL: no rank printed '$marker'"; exit 1; }
  elapsed=$(awk -v a="$started" -v b="$end" 'BEGIN { printf "%d", b - a + 0.999 }')
  [ "$rc" = 76 ] || { echo "FAIL: exit code $rc, expected 76"; exit 1; }
  [ "$elapsed" -le 12 ] ||
    { echo "FAIL: ended ${elapsed} s after '$marker', more than timeout + 10 s"; exit 1; }
}
