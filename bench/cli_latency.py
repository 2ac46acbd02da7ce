#!/usr/bin/env python3
# How fast the light commands answer (docs/performance.md, "Commands that answer at once"): each
# command's wall time (median of --repeat runs) and peak memory (max RSS), run round-robin with
# the yardsticks in one run, so a loaded machine slows all of them alike:
#   /usr/bin/python3 bench/cli_latency.py [--cohort build/cohort] [--run DIR --data FILE]
#                                          [--repeat 21] [--json]
# Without --run it first trains a small run (MLP, 40 steps, checkpoints) in a temporary directory.
# The limits are issue 25's: --version and help under 50 ms and 30 MB, the rest under 200 ms, for
# the wall time; the CPU time (user + system, from the child's rusage, with the few hundred
# microseconds Python's fork adds) is what a loaded machine does not stretch.
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

p = argparse.ArgumentParser()
p.add_argument("--cohort", default=os.path.join(os.path.dirname(__file__), "..", "build", "cohort"))
p.add_argument("--run", help="a run directory (with checkpoints/ and metrics.jsonl)")
p.add_argument("--data", help="the dataset for data inspect (with --run)")
p.add_argument("--repeat", type=int, default=21)
p.add_argument("--json", action="store_true")
a = p.parse_args()
cohort = os.path.abspath(a.cohort)

def call(argv, cwd):
    """Wall seconds, CPU seconds (user + system: what load does not stretch) and exit status of
    one run; stdout and stderr discarded."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
            os.waitstatus_to_exitcode(status))

def peak_mib(argv, cwd):
    """Max RSS of the command itself: GNU time's %M (a child forked from this Python would count
    Python's own pages, which it shares until exec)."""
    out = os.path.join(work, "rss")
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out] + argv, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return int(f.read().split()[-1]) / 1024

work = tempfile.mkdtemp(prefix="cohort-cli-bench-")
try:
    run, data = a.run, a.data
    if run is None:
        data, run = os.path.join(work, "set.h5"), os.path.join(work, "run")
        subprocess.run([cohort, "data", "make-synthetic", "--samples", "4096", "--features", "32",
                        "--out", data], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([cohort, "train", "--set", "data.path=" + data, "--set", "train.max_steps=40",
                        "--set", "train.log_every=0", "--set", "checkpoint.every_steps=10",
                        "--set", "train.run_dir=" + run], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ini = os.path.join(run, "config.resolved.ini")
    ckpt = os.path.join(run, "checkpoints")
    light = [  # (name, argv, limit ms, limit MiB)
        ("cohort --version", [cohort, "--version"], 50, 30),
        ("cohort help", [cohort, "help"], 50, 30),
        ("cohort ckpt list", [cohort, "ckpt", "list", ckpt], 200, None),
        ("cohort ckpt inspect", [cohort, "ckpt", "inspect", ckpt], 200, None),
        ("cohort ckpt verify", [cohort, "ckpt", "verify", ckpt], 200, None),
        ("cohort data inspect", [cohort, "data", "inspect", data], 200, None),
        ("cohort config check", [cohort, "config", "check", ini], 200, None),
        ("cohort top --once", [cohort, "top", run, "--once"], 200, None),
        ("cohort report", [cohort, "report", run, "-o", os.path.join(work, "r.html")], 200, None),
        ("cohort submit --dry-run", [cohort, "submit", "--config", ini, "--dry-run"], 200, None),
    ]
    yardsticks = [("git --version", ["git", "--version"])]
    # For scale, timed in a loop of its own afterwards: a second of LibTorch start-up between the
    # light commands would evict what they share from the caches and slow the next one.
    heavy = ("cohort env --help (loads LibTorch)", [cohort, "env", "--help"])
    if shutil.which("sinfo") and call(["sinfo", "--version"], work)[2] == 0:
        yardsticks.insert(0, ("sinfo --version", ["sinfo", "--version"]))
    every = [(n, c) for n, c, _, _ in light] + yardsticks
    seconds, cpu, rss = {n: [] for n, _ in every}, {n: [] for n, _ in every}, {n: 0.0 for n, _ in every}
    for _ in range(a.repeat):
        for name, argv in every:
            t, c, code = call(argv, work)
            if code != 0:
                sys.exit(f"{name}: exit {code}")
            seconds[name].append(t)
            cpu[name].append(c)
    seconds[heavy[0]], cpu[heavy[0]] = [], []
    for _ in range(max(3, a.repeat // 4)):
        t, c, _ = call(heavy[1], work)
        seconds[heavy[0]].append(t)
        cpu[heavy[0]].append(c)
    every.append(heavy)
    yardsticks.append(heavy)
    for _ in range(3):
        for name, argv in every:
            rss[name] = max(rss.get(name, 0.0), peak_mib(argv, work))
    rows = []
    for name, _, *limits in [(n, c, lt, lm) for n, c, lt, lm in light] + [(n, c, None, None) for n, c in yardsticks]:
        ms = statistics.median(seconds[name]) * 1e3
        limit_ms, limit_mb = limits
        ok = None if limit_ms is None else (ms < limit_ms and (limit_mb is None or rss[name] < limit_mb))
        rows.append({"command": name, "median_ms": round(ms, 1),
                     "median_cpu_ms": round(statistics.median(cpu[name]) * 1e3, 1),
                     "max_rss_mib": round(rss[name], 1),
                     "limit_ms": limit_ms, "limit_mib": limit_mb, "within": ok})
    result = {"repeat": a.repeat, "cpus": os.cpu_count(), "load": os.getloadavg()[0], "rows": rows}
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'command':38} {'median ms':>10} {'CPU ms':>7} {'max RSS MiB':>12}  limit")
        for r in rows:
            limit = "" if r["limit_ms"] is None else f"{r['limit_ms']} ms" + (f", {r['limit_mib']} MiB" if r["limit_mib"] else "")
            mark = "" if r["within"] is None else ("ok" if r["within"] else "OVER")
            print(f"{r['command']:38} {r['median_ms']:10.1f} {r['median_cpu_ms']:7.1f} "
                  f"{r['max_rss_mib']:12.1f}  {limit} {mark}")
    sys.exit(0 if all(r["within"] is not False for r in rows) else 1)
finally:
    shutil.rmtree(work, ignore_errors=True)
