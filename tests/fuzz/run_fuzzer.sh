#!/usr/bin/env bash
# run_fuzzer.sh FUZZER SEED_CORPUS WORKDIR SECONDS: runs one libFuzzer target for SECONDS from the
# seed corpus (copied: the tree is never written), each input under 25 s (a loaded machine
# under ASan renders a large metrics file in seconds) and 2 GiB, and fails with
# the crashing input's path when the fuzzer finds one. Prints libFuzzer's final statistics.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
# The suppressions every target shares, and the target's own (lsan-<target>.supp) when it has one.
cat "$(dirname "$0")/lsan.supp" >"$work/lsan.supp"
own="$(dirname "$0")/lsan-$(basename "$fuzzer").supp"
[ ! -f "$own" ] || cat "$own" >>"$work/lsan.supp"
export LSAN_OPTIONS="suppressions=$work/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
set +e
"$fuzzer" "$work/corpus" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -print_funcs=0 -artifact_prefix="$work/artifacts/" 2>"$work/log"
rc=$?
set -e
grep -E '^(stat::|#[0-9]+.*(DONE|cov))' "$work/log" | tail -8
# crash-, leak-, timeout- and oom- artifacts are findings; slow-unit- ones (over 10 s, which
# ASan's allocator makes of a legitimately large hostlist) are listed, not failed.
findings=$(ls "$work/artifacts" | grep -v '^slow-unit-' || true)
if [ "$rc" != 0 ] || [ -n "$findings" ]; then
  tail -40 "$work/log"
  echo "run_fuzzer: $(basename "$fuzzer") found a problem: $findings" >&2
  exit 1
fi
slow=$(ls "$work/artifacts" | grep '^slow-unit-' || true)
[ -z "$slow" ] || echo "run_fuzzer: slow inputs (not failures): $work/artifacts/$slow"
echo "run_fuzzer: $(basename "$fuzzer"): no finding in $seconds s"
