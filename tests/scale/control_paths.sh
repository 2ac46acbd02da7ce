#!/usr/bin/env bash
# The control paths at 2, 8, 32 and 64 ranks (`cohort bench control --json`, oversubscribed; a
# third argument, e.g. "2 3", measures other sizes: mpi.bench_control runs it so in CI):
# prints the table docs/scaling.md extrapolates from, and checks how each grows with R:
#  - the checkpoint plan's all-gather moves ~R x (one rank's tensor list) to every rank, while
#    the plan once per layout moves 8 bytes whatever R;
#  - the monitor's summary gathers exactly one record (summary_fields doubles) per rank to
#    rank 0 and sends the other ranks nothing; shared with the nodes' endpoints, each other rank receives the same bytes at any R;
#  - the manifest grows linearly in R (each rank's slices and shard entry), not faster.
set -euo pipefail
cohort=$1 work=$2 sizes=${3:-2 8 32 64}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for r in $sizes; do
  $MPIEXEC $MPIEXEC_FLAGS -np "$r" "$cohort" bench control --json --dir "$work" >"r$r.json" \
    2>"r$r.err" || fail "bench control at $r ranks: $(cat "r$r.err")"
  # The save's directory is one for all ranks, and removed: nothing of it is left.
  left=$(compgen -G "$work/cohort-bench-control-*" || true)
  [ -z "$left" ] || fail "bench control at $r ranks left $left behind"
done
/usr/bin/python3 - $sizes <<'PY'
import json, sys
rows = [json.load(open(f"r{r}.json")) for r in sys.argv[1:]]
print(f"{'ranks':>5} {'start-up s':>10} {'verify ms':>9} {'plan ms':>8} {'plan B':>8} "
      f"{'cached ms':>9} {'manifest B':>10} {'summary B':>9} {'summary ms':>10} "
      f"{'shared B':>8} {'shared ms':>9}")
for x in rows:
    print(f"{x['ranks']:>5} {x['startup_s']:>10.2f} {x['verify_s']*1e3:>9.2f} "
          f"{x['plan_s']*1e3:>8.2f} {x['plan_bytes']:>8} {x['plan_cached_s']*1e3:>9.3f} "
          f"{x['manifest_bytes']:>10} {x['summary_bytes']:>9} {x['summary_s']*1e3:>10.3f} "
          f"{x['summary_shared_rank_bytes']:>8} {x['summary_shared_s']*1e3:>9.3f}")
for x in rows:
    assert x["summary_fields"] == rows[0]["summary_fields"] > 0, x
    assert x["summary_bytes"] == x["summary_fields"] * 8 * x["ranks"], x
    assert x["summary_rank_bytes"] == 0, x
    assert x["summary_shared_rank_bytes"] == rows[0]["summary_shared_rank_bytes"] > 0, x
first, last = rows[0], rows[-1]
growth = last["ranks"] / first["ranks"]
plan = last["plan_bytes"] / first["plan_bytes"]
manifest = last["manifest_bytes"] / first["manifest_bytes"]
assert 0.8 * growth <= plan <= 1.25 * growth, f"plan bytes grew {plan:.1f}x for {growth:.0f}x ranks"
assert manifest <= 1.25 * growth, f"the manifest grew {manifest:.1f}x for {growth:.0f}x ranks"
print(f"from {first['ranks']} to {last['ranks']} ranks: plan bytes x{plan:.1f}, "
      f"manifest x{manifest:.1f} (linear: x{growth:.1f})")
PY
