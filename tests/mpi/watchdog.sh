#!/usr/bin/env bash
# Runs watchdog_skip on 3 ranks: expects exit code 76 within timeout (2 s) + 10 s and a message
# naming the collective, its sequence number, the step and the ranks waited for.
set -uo pipefail
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# shellcheck disable=SC2086
"$MPIEXEC" $MPIEXEC_FLAGS -np 3 "$WATCHDOG_SKIP" 2>"$err" >/dev/null
rc=$?
end=$(date +%s.%N)
cat "$err"
issued=$(grep -o 'issues all_reduce #3 at [0-9.]*' "$err" | head -1 | awk '{print $NF}')
[ -n "$issued" ] || { echo "FAIL: no rank reached all_reduce #3"; exit 1; }
elapsed=$(awk -v a="$issued" -v b="$end" 'BEGIN { printf "%d", b - a + 0.999 }')
[ "$rc" = 76 ] || { echo "FAIL: exit code $rc, expected 76"; exit 1; }
[ "$elapsed" -le 12 ] || { echo "FAIL: ended ${elapsed} s after the collective, more than timeout + 10 s"; exit 1; }
grep -q "watchdog: rank [02] of 3 .*all_reduce #3 (1024 x Float) at step 12" "$err" \
  || { echo "FAIL: the message does not name all_reduce #3 at step 12"; exit 1; }
grep -q "waiting for ranks" "$err" || { echo "FAIL: the ranks waited for are not named"; exit 1; }
grep -q "flight recorder" "$err" || { echo "FAIL: no flight recorder dump"; exit 1; }
echo "the job ended ${elapsed} s after the skipped collective, exit code $rc"
