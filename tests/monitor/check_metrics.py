"""Consistency of a run's metrics.jsonl (used by tests/monitor/monitor.sh).

usage: check_metrics.py RUN_DIR GLOBAL_BATCH
Checks, and exits 1 naming the first that fails:
  - every step record's phases sum to its step time, and the named phases (all but "other")
    account for at least 90 % of the run's step time;
  - samples/s x time = samples: each summary's samples_per_s times its window's step time (rank
    0's step records) gives the window's samples; the end record's samples_per_s times its seconds
    gives the samples of all steps;
  - each summary's phase means sum to its mean step time; its all-reduce bytes per step equal the
    model's parameter bytes (one bucket of float32 gradients), its bus bandwidth is positive;
  - the run record lists one host per rank, and every step saw GLOBAL_BATCH samples.
"""
import json
import os
import math
import sys

PHASES = ["data", "forward", "backward", "comm", "optimizer", "checkpoint", "other"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def close(a, b, rel, what):
    if not math.isclose(a, b, rel_tol=rel, abs_tol=1e-9):
        fail(f"{what}: {a} vs {b} (rel tol {rel})")


def main():
    run_dir, batch = sys.argv[1], int(sys.argv[2])
    records = [json.loads(line) for line in open(run_dir + "/metrics.jsonl")]
    run = records[0]
    if run.get("event") != "run" or run.get("schema") != "cohort.metrics" or run.get("version") != 1:
        fail(f"first record is not a version-1 run record: {run}")
    if len(run["hosts"]) != run["ranks"]:
        fail(f"{len(run['hosts'])} hosts for {run['ranks']} ranks")
    steps = [r for r in records if r["event"] == "step"]
    summaries = [r for r in records if r["event"] == "summary"]
    end = [r for r in records if r["event"] == "end"][-1]
    if not steps or not summaries:
        fail("no step or no summary records")
    total = named = 0.0
    for s in steps:
        phases = sum(s[p + "_s"] for p in PHASES)
        close(phases, s["step_s"], 1e-9, f"step {s['step']}: phases vs step time")
        if s["samples"] != batch:
            fail(f"step {s['step']}: {s['samples']} samples, expected {batch}")
        total += s["step_s"]
        named += s["step_s"] - s["other_s"]
    if named < 0.9 * total:
        fail(f"named phases cover {named / total:.1%} of the step time (< 90%)")
    by_step = {s["step"]: s for s in steps}
    for w in summaries:
        window = [by_step[i] for i in range(w["first_step"], w["step"] + 1)]
        if len(window) != w["window_steps"]:
            fail(f"summary to step {w['step']}: {w['window_steps']} steps, {len(window)} records")
        seconds = sum(s["step_s"] for s in window)
        samples = sum(s["samples"] for s in window)
        close(w["samples_per_s"] * seconds, samples, 1e-6, f"summary {w['step']}: samples/s x time")
        f = w["fields"]
        close(sum(f[p + "_s"]["mean"] for p in PHASES), f["step_s"]["mean"], 1e-9,
              f"summary {w['step']}: phase means vs step mean")
        close(f["allreduce_bytes"]["mean"], 4 * run["parameters"], 1e-9,
              f"summary {w['step']}: all-reduce bytes per step vs 4 x parameters")
        if f["busbw_bytes_per_s"]["mean"] <= 0 or f["allreduce_latency_s"]["mean"] <= 0:
            fail(f"summary {w['step']}: no bus bandwidth or latency")
        cores = os.cpu_count()
        if f["host_cores"]["min"] != cores or f["host_load"]["max"] <= 0:
            fail(f"summary {w['step']}: host_cores {f['host_cores']} (this host: {cores}), "
                 f"host_load {f['host_load']}")
        if len(w["rank_busy_s"]) != run["ranks"]:
            fail(f"summary {w['step']}: {len(w['rank_busy_s'])} per-rank figures")
    if end["samples"] != end["steps"] * batch:
        fail(f"end: {end['samples']} samples for {end['steps']} steps")
    close(end["samples_per_s"] * end["seconds"], end["samples"], 1e-6,
          "end: samples/s x seconds vs samples")
    print(f"ok: {len(steps)} steps, {len(summaries)} summaries, named phases "
          f"{named / total:.1%} of {total:.3f} s")


main()
