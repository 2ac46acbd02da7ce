#!/usr/bin/env bash
# `cohort report` in a real browser: a run with evaluations, checkpoints and a restart (a second
# start resuming from the first one's checkpoint), its report rendered by Debian's headless
# Chromium: every chart is in the rendered DOM (the page's own script counted them, so scripts
# ran), the screenshot is a real image, and the browser console shows no message. A page with an
# error proves that console messages would be seen.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
browser=$(command -v chromium-headless-shell || command -v chromium || true)
[ -n "$browser" ] || fail "no headless Chromium (scripts/install-deps installs chromium-headless-shell)"
"$cohort" data make-synthetic --kind classification --samples 2048 --features 64 --classes 4 \
  --seed 4 --out set.h5 >/dev/null
"$cohort" data make-synthetic --kind classification --samples 512 --features 64 --classes 4 \
  --seed 5 --out val.h5 >/dev/null
train() {  # max_steps
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set data.val_path=val.h5 \
    --set data.batch_size=16 --set train.epochs=3 --set train.max_steps="$1" --set train.log_every=0 \
    --set train.eval_every=20 --set checkpoint.every_steps=20 --set train.run_dir=run \
    --set monitor.summary_every=10
}
train 40 >first.log 2>&1 || fail "first start: $(cat first.log)"
train 100 >second.log 2>&1 || fail "second start: $(cat second.log)"
grep -q '"event":"resume"' run/metrics.jsonl || fail "the second start did not resume"
"$cohort" report run >report.log || fail "report: $(cat report.log)"
[ -s run/report.html ] || fail "no report.html"
grep -q "http" <(grep -o 'src="[^"]*"\|href="[^"]*"' run/report.html) &&
  fail "the report references outside resources"

# view PAGE OUT: renders PAGE; OUT.dom (the DOM after scripts), OUT.png, OUT.err (browser log).
view() {
  local flags=(--no-sandbox --disable-gpu --user-data-dir="$work/profile" --enable-logging=stderr
               --v=0 --window-size=800,2600 --virtual-time-budget=2000)
  "$browser" "${flags[@]}" --dump-dom "file://$1" >"$2.dom" 2>"$2.err"
  "$browser" "${flags[@]}" --screenshot="$2.png" "file://$1" >/dev/null 2>>"$2.err"
}
view "$work/run/report.html" report
for id in loss eval throughput breakdown comm latency ranks events; do
  grep -q "data-chart=\"$id\"" report.dom || fail "chart $id missing from the rendered page"
done
grep -q '<body data-charts="8">' report.dom || fail "the page's script did not count 8 charts"
grep -q "checkpoint_saved" report.dom || fail "no checkpoint in the events"
grep -q ">restart<\|restart at\|>restart" report.dom || fail "no restart in the events"
if grep -q ":CONSOLE" report.err; then fail "console messages: $(grep :CONSOLE report.err)"; fi
size=$(stat -c %s report.png)
[ "$size" -gt 20000 ] || fail "screenshot of $size bytes"
[ "$(head -c 8 report.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"

echo '<!doctype html><html><body><script>console.error("probe"); undefined_fn();</script></body></html>' >bad.html
view "$work/bad.html" bad
grep -q ':CONSOLE.*probe' bad.err || fail "console messages are not seen: $(tail -3 bad.err)"
echo "report: 8 charts rendered by $(basename "$browser"), no console message, screenshot $size bytes"
