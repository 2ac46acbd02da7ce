#!/usr/bin/env bash
# Runs watchdog_skip on 3 ranks: expects exit code 76 within timeout (2 s) + 10 s and a message
# naming the collective, its sequence number, the step and the ranks waited for.
set -uo pipefail
source "$(dirname "$0")/watchdog_lib.sh"
watchdog_run 3 "$WATCHDOG_SKIP" "issues all_reduce #3"
grep -aq "watchdog: rank [02] of 3 .*all_reduce #3 (1024 x Float) at step 12" "$err" \
  || { echo "FAIL: the message does not name all_reduce #3 at step 12"; exit 1; }
grep -aq "waiting for ranks" "$err" || { echo "FAIL: the ranks waited for are not named"; exit 1; }
grep -aq "flight recorder" "$err" || { echo "FAIL: no flight recorder dump"; exit 1; }
echo "the job ended ${elapsed} s after the skipped collective, exit code $rc"
