#!/usr/bin/env bash
# Runs watchdog_buried on 2 ranks: expects exit code 76 within timeout (2 s) + 10 s of the
# receive that never completes, a message naming it (recv #0) although 150 operations completed
# after it, and no report of the send that completed unasked.
set -uo pipefail
source "$(dirname "$0")/watchdog_lib.sh"
watchdog_run 2 "$WATCHDOG_BURIED" "posts recv #0"
grep -aq "watchdog: rank 0 of 2 .*recv #0 (4 x Float) at step 7" "$err" \
  || { echo "FAIL: the message does not name recv #0 at step 7"; exit 1; }
grep -aq "waiting for rank 1" "$err" || { echo "FAIL: the peer waited for is not named"; exit 1; }
if grep -aq "watchdog: rank 1 of 2" "$err"; then
  echo "FAIL: rank 1 reported a hang (its completed send?)"; exit 1
fi
grep -aq "#0 .*recv .*IN FLIGHT" "$err" || { echo "FAIL: the dump does not list recv #0 in flight"; exit 1; }
echo "the job ended ${elapsed} s after the buried receive, exit code $rc"
