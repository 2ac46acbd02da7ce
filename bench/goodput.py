"""Reads bench/goodput.sh's runs and prints goodput, each fault's cost and the floors, side by side.

goodput = productive_s / wall_s: wall_s runs from the first step record to the stop (USR1 at the
wall time), productive_s sums the step_s of each step number's last record in metrics.jsonl up to
then (a step redone after a restart counts once; a step whose record is missing counts at the
median). Per fault, loss_to_first_step_s
is the time from the fault to the first step record after the next start, and the restart record
(ops/restart_record.hpp) gives its parts.
"""
import json
import statistics
import sys


def load(path):
    try:
        with open(path) as stream:
            return [json.loads(line) for line in stream if line.strip()]
    except FileNotFoundError:
        return []


def run_figures(work, mode, spare_nodes):
    t_stop = json.load(open(f"{work}/{mode}-window.json"))["t_stop"]
    records = [r for r in load(f"{work}/{mode}/metrics.jsonl") if r.get("t", 0) <= t_stop]
    steps = [r for r in records if r.get("event") == "step"]
    if not steps:
        return {"spare_nodes": spare_nodes, "error": "no step recorded"}
    last = {}
    for r in steps:
        last[r["step"]] = r
    final = max(last)
    median = statistics.median(r["step_s"] for r in last.values())
    productive = sum(last[s]["step_s"] if s in last else median for s in range(1, final + 1))
    wall = t_stop - steps[0]["t"] + steps[0]["step_s"]
    starts = [r["t"] for r in records if r.get("event") == "startup"]
    restarts = [r for r in records if r.get("event") == "restart"]
    faults = []
    for fault in load(f"{work}/{mode}-faults.jsonl"):
        if "t_unix" not in fault:
            faults.append(fault)
            continue
        t = fault["t_unix"]
        start = min((s for s in starts if s > t), default=None)
        first = min((r["t"] for r in steps if start is not None and r["t"] >= start), default=None)
        record = min((r for r in restarts if r.get("t_decided_ms", 0) / 1000 > t),
                     key=lambda r: r["t_decided_ms"], default=None)
        entry = dict(fault)
        entry["loss_to_first_step_s"] = round(first - t, 2) if first else None
        if record:
            entry.update({"restart_kind": record["kind"], "redone_steps": record.get("redone_steps"),
                          "left_out": [n["node"] for n in record["left_out"]],
                          "spares": record["spares"], "seconds_lost": record.get("seconds_lost")})
        faults.append(entry)
    return {"spare_nodes": spare_nodes, "wall_s": round(wall, 1), "productive_s": round(productive, 1),
            "goodput": round(productive / wall, 4), "final_step": final,
            "step_s_median": round(median, 5), "restarts": len(restarts), "faults": faults}


def main():
    work, modes, wall, interval, kinds, seed, active, spares, repair = sys.argv[1:10]
    out = sys.argv[11] if len(sys.argv) > 11 and sys.argv[10] == "--json" else None
    modes = modes.split(",")
    runs = {m: run_figures(work, m, int(spares) if m == "spares" else 0) for m in modes}
    floors = {}
    if "requeue" in runs and "spares" in runs:
        def losses(mode):
            return [f["loss_to_first_step_s"] for f in runs[mode].get("faults", [])
                    if f.get("loss_to_first_step_s") and f.get("restart_kind") == ("in_allocation" if mode == "spares" else "requeue")]
        spare_loss, requeue_loss = losses("spares"), losses("requeue")
        if spare_loss and requeue_loss:
            ratio = statistics.median(spare_loss) / statistics.median(requeue_loss)
            floors["loss_to_first_step_ratio"] = {"value": round(ratio, 3), "max": 0.5, "pass": ratio <= 0.5}
        g = runs["spares"].get("goodput")
        if g is not None:
            floors["goodput_spares"] = {"value": g, "min": 0.9, "pass": g >= 0.9}
    result = {"bench": "goodput",
              "cluster": {"kind": "netns", "nodes": int(active) + int(spares), "slurmd_timeout_s": 10},
              "settings": {"wall_s": int(wall), "interval_s": int(interval), "faults": kinds.split(","),
                           "seed": int(seed), "active": int(active), "spares": int(spares),
                           "repair_after_s": int(repair)},
              "schedule": json.load(open(f"{work}/schedule.json")), "runs": runs, "floors": floors}
    if out:
        with open(out, "w") as stream:
            json.dump(result, stream, indent=1)
    print(f"goodput, one node lost every {interval} s for {wall} s ({active} nodes training, "
          f"{spares} spare(s) in the spares mode; faults {kinds}, seed {seed}):")
    print(f"{'mode':8} {'goodput':>8} {'productive s':>13} {'wall s':>8} {'restarts':>9}  loss to first step (s) per fault")
    for mode, r in runs.items():
        losses = ", ".join(f"{f.get('kind')} {f.get('node', '?')}: {f.get('loss_to_first_step_s')}"
                           f" ({f.get('restart_kind', '-')})" for f in r.get("faults", []))
        print(f"{mode:8} {r.get('goodput', 0):8.3f} {r.get('productive_s', 0):13.1f} "
              f"{r.get('wall_s', 0):8.1f} {r.get('restarts', 0):9d}  {losses}")
    for name, f in floors.items():
        print(f"floor {name}: {f['value']} ({'pass' if f['pass'] else 'FAIL'})")


main()
