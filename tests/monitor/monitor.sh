#!/usr/bin/env bash
# The monitor end to end on 2 real ranks (mpirun):
#  - consistency of metrics.jsonl (check_metrics.py), and metrics.prom parsed by promtool;
#  - the live /metrics endpoint (monitor.http_port=0: any free port) answers while the run goes,
#    bound to 127.0.0.1, lists this node's ranks' busy times, and promtool parses what it serves;
#  - `cohort top` follows the live run (off a terminal: a frame per change) and ends with it;
#    `cohort top --once` shows a finished run;
#  - a missing run directory is a one-line error with exit code 3 (report and top).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
py=/usr/bin/python3
# promtool is a test dependency (docs/building.md): missing, it fails the test, as a missing
# Chromium fails monitor.report_browser; a pass without it would leave the format unchecked.
command -v promtool >/dev/null ||
  fail "no promtool (scripts/install-deps installs it: Debian 12's prometheus package, Debian 13's promtool)"
# The control: this promtool rejects a broken exposition (an unclosed label), so its passes below
# mean something.
! printf 'cohort_step{job="local 1\n' | promtool check metrics >/dev/null 2>&1 ||
  fail "promtool accepts a broken metrics line: it checks nothing"
run() {  # run_dir [--set ...]: train with this test's logging and summary cadence
  local dir=$1
  shift
  train "$dir" --set train.log_every=40 --set monitor.summary_every=16 "$@"
}
run plain >plain.log 2>&1 || fail "run: $(cat plain.log)"
$py "$here/check_metrics.py" plain 64 || fail "metrics.jsonl is not consistent"
grep -q "^step  40/128 epoch 0 loss .* step-ms " plain.log || fail "no plain progress line: $(cat plain.log)"
promtool check metrics <plain/metrics.prom || fail "promtool rejects metrics.prom"
echo "promtool: metrics.prom ok"
grep -q '^cohort_step{job="local",run="plain"} 128$' plain/metrics.prom || fail "metrics.prom: $(head plain/metrics.prom)"

# The live endpoint: a run slowed to a few seconds, scraped while it trains. live.log exists
# before the background run opens it: a loaded machine can poll before the fork redirects, and a
# sed of a missing file would end this script (set -e).
: >live.log
run live --set monitor.http_port=0 --set debug.data_delay_ms=15 >live.log 2>&1 &
pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/^monitor: serving \/metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' live.log)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { kill $pid; fail "no endpoint announced: $(cat live.log)"; }
timeout 120 "$cohort" top live --interval 0.2 >top_live.txt 2>&1 &
top_pid=$!
scraped=0
for _ in $(seq 1 100); do
  if $py - "$port" >scrape.txt 2>/dev/null <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
if "cohort_step{" not in text:
    sys.exit(1)
print(text, end="")
PY
  then scraped=1; break; fi
  sleep 0.05
done
wait $pid || fail "live run: $(cat live.log)"
wait $top_pid || fail "cohort top did not end with the run: $(tail -5 top_live.txt)"
frames=$(grep -c "^cohort top  live" top_live.txt)
[ "$frames" -ge 2 ] || fail "cohort top drew $frames frame(s) while the run went"
last_frame=$(awk '/^cohort top  live/ { frame = "" } { frame = frame $0 "\n" } END { printf "%s", frame }' top_live.txt)
grep -q "^step 128/128 .* finished: epochs" <<<"$last_frame" || fail "top's last frame: $last_frame"
echo "top: followed the live run, $frames frames"
[ $scraped = 1 ] || fail "the endpoint never served cohort_step"
grep -q '^cohort_samples_per_second{' scrape.txt || fail "scrape: $(head scrape.txt)"
# The node's endpoint lists its node's ranks (both are on this host), and the job's figures
# rank 0 shared (cohort_ranks; the diagnosis gauges).
for r in 0 1; do
  grep -q "^cohort_rank_busy_seconds{.*rank=\"$r\"[,}].* [0-9]" scrape.txt ||
    fail "scrape: no busy time of rank $r: $(grep rank_busy scrape.txt)"
done
grep -q '^cohort_ranks{.*} 2$' scrape.txt || fail "scrape: $(grep cohort_ranks scrape.txt)"
grep -q '^cohort_diagnosis{.*rule="straggler".*} [01]$' scrape.txt || fail "scrape: no diagnosis gauge"
promtool check metrics <scrape.txt || fail "promtool rejects the endpoint's answer"
echo "endpoint: scraped 127.0.0.1:$port during the run"

"$cohort" top plain --once >top.txt || fail "top failed"
grep -q "^step 128/128 \[#*\] 100%  finished: epochs" top.txt || fail "top: $(cat top.txt)"
grep -q "^busy ms by rank: r0 [0-9.]*\*\{0,1\} r1 " top.txt || fail "top: $(cat top.txt)"
for tool in report top; do
  set +e
  "$cohort" $tool no-such-run >bad.txt 2>&1
  rc=$?
  set -e
  [ $rc = 3 ] || fail "$tool of a missing run: exit $rc"
  grep -q "^cohort: error: no-such-run/metrics.jsonl: no such file" bad.txt || fail "$tool: $(cat bad.txt)"
  [ "$(wc -l <bad.txt)" = 1 ] || fail "$tool: more than one line: $(cat bad.txt)"
done
echo "monitor: ok"
