#!/usr/bin/python3
"""Medians of bench/peer/run.sh's runs: the side-by-side table, the ratios, 2-rank weak-scaling
efficiency and the allocator's effect. Usage: summarize.py results.jsonl THREADS; writes
summary.json next to the input and prints the tables."""
import collections
import json
import os
import statistics
import sys


def main():
    path, threads = sys.argv[1], int(sys.argv[2])
    runs = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        key = (r["model"], r["ranks"], r["malloc_setting"], r["run"]["side"])
        runs[key].append(r["run"]["samples_per_s"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    cells = []
    print(f"samples/s, medians of {len(next(iter(runs.values())))} runs; {threads} torch and "
          f"OpenBLAS thread(s) per rank on both sides; malloc on/off = allocator tuned or not")
    print("ratio = cohort as shipped (tuned) / PyTorch with whichever setting was faster")
    print(f"{'model':5} {'ranks':>5} {'cohort on':>10} {'cohort off':>10} {'torch on':>9} "
          f"{'torch off':>9} {'ratio':>6}")
    for model in ("mlp", "cnn"):
        for ranks in (1, 2):
            c = {m: med[(model, ranks, m, "cohort")] for m in ("on", "off")}
            t = {m: med[(model, ranks, m, "pytorch-ddp-gloo")] for m in ("on", "off")}
            best = max(t, key=t.get)
            ratio = c["on"] / t[best]
            cells.append({"model": model, "ranks": ranks, "cohort_tuned": c["on"],
                          "cohort_untuned": c["off"], "pytorch_tuned": t["on"],
                          "pytorch_untuned": t["off"], "pytorch_best_setting": best,
                          "ratio": ratio})
            print(f"{model:5} {ranks:5} {c['on']:10.0f} {c['off']:10.0f} {t['on']:9.0f} "
                  f"{t['off']:9.0f} {ratio:6.2f}")
    print("\n2-rank weak-scaling efficiency (samples/s at 2 ranks / twice that at 1 rank)")
    scaling = []
    for model in ("mlp", "cnn"):
        for malloc in ("on", "off"):
            row = {"model": model, "malloc_tuning": malloc}
            for side, name in (("cohort", "cohort"), ("pytorch-ddp-gloo", "pytorch")):
                row[name] = med[(model, 2, malloc, side)] / (2 * med[(model, 1, malloc, side)])
            if malloc == "on":
                row["no_communication"] = (med[(model, 2, "on", "cohort-independent")]
                                           / (2 * med[(model, 1, "on", "cohort")]))
            scaling.append(row)
            extra = (f"  (two independent 1-rank runs: {row['no_communication']:.2f})"
                     if "no_communication" in row else "")
            print(f"{model:5} malloc {malloc:>3}: cohort {row['cohort']:.2f}, "
                  f"pytorch {row['pytorch']:.2f}{extra}")
    print("\nallocator tuning, samples/s on / off")
    allocator = []
    for model in ("mlp", "cnn"):
        for ranks in (1, 2):
            row = {"model": model, "ranks": ranks}
            for side, name in (("cohort", "cohort"), ("pytorch-ddp-gloo", "pytorch")):
                row[name] = med[(model, ranks, "on", side)] / med[(model, ranks, "off", side)]
            allocator.append(row)
            print(f"{model:5} {ranks} rank(s): cohort {row['cohort']:.2f}, pytorch {row['pytorch']:.2f}")
    out = os.path.join(os.path.dirname(os.path.abspath(path)), "summary.json")
    with open(out, "w") as f:
        json.dump({"threads_per_rank": threads, "cells": cells, "weak_scaling": scaling,
                   "allocator": allocator}, f, indent=2)


if __name__ == "__main__":
    main()
