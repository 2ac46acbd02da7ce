#!/usr/bin/env bash
# Runs watchdog_buried on 2 ranks: expects exit code 76 within timeout (2 s) + 10 s of the
# receive that never completes, a message naming it (recv #0) although 150 operations completed
# after it, and no report of the send that completed unasked.
set -uo pipefail
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# shellcheck disable=SC2086
"$MPIEXEC" $MPIEXEC_FLAGS -np 2 "$WATCHDOG_BURIED" 2>"$err" >/dev/null
rc=$?
end=$(date +%s.%N)
cat "$err"
posted=$(grep -o 'posts recv #0 at [0-9.]*' "$err" | head -1 | awk '{print $NF}')
[ -n "$posted" ] || { echo "FAIL: rank 0 did not post its receive"; exit 1; }
elapsed=$(awk -v a="$posted" -v b="$end" 'BEGIN { printf "%d", b - a + 0.999 }')
[ "$rc" = 76 ] || { echo "FAIL: exit code $rc, expected 76"; exit 1; }
[ "$elapsed" -le 12 ] || { echo "FAIL: ended ${elapsed} s after the receive, more than timeout + 10 s"; exit 1; }
grep -q "watchdog: rank 0 of 2 .*recv #0 (4 x Float) at step 7" "$err" \
  || { echo "FAIL: the message does not name recv #0 at step 7"; exit 1; }
grep -q "waiting for rank 1" "$err" || { echo "FAIL: the peer waited for is not named"; exit 1; }
if grep -q "watchdog: rank 1 of 2" "$err"; then
  echo "FAIL: rank 1 reported a hang (its completed send?)"; exit 1
fi
grep -q "#0 .*recv .*IN FLIGHT" "$err" || { echo "FAIL: the dump does not list recv #0 in flight"; exit 1; }
echo "the job ended ${elapsed} s after the buried receive, exit code $rc"
