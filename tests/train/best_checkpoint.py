"""Best checkpoints and early stopping (checkpoint.best_metric, best_keep; train.early_stop_*)
against an independent Python statement of Lightning's rules, and exact across a resume.

A 2-rank MLP on a noisy synthetic set (6 overlapping classes, lr 0.3: the validation loss goes up
and down) is evaluated every 3 steps, keeps the 3 best checkpoints by validation loss and stops
after 4 evaluations without an improvement of more than 0.001. Run A goes uninterrupted:
  - its `best` records and `early_stop` step are what the reference computes from its own `eval`
    records (top-K by value, an equal value keeping the earlier step; patience and min_delta);
    the run stopped early (else the test proves nothing) with stop_reason "early stop";
  - its checkpoint directory holds exactly the 3 best and the latest (keep_last = 1 deletes
    the others), and `best` links to the best; `cohort ckpt export .../best` reads it.
Runs B are the same run stopped by SIGUSR1 after its step-9 checkpoint, or after the last
evaluation that entered the best K (the resumed run's saves then all go through retention with
the best K restored from the checkpoint), then started again; run C
starts from a copy of A's best checkpoint of step 15 alone (written before that step's
evaluation: the restart must evaluate step 15 again, and says so). All end at A's step with A's
kept steps and A's final parameters, bit-identical, and every evaluation's loss equal to A's.
checkpoint.best_metric = mae on a classification task is refused (exit 2).

Usage: best_checkpoint.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import json
import os
import shutil
import signal
import subprocess
import time

import torch

from torch_ref import fail, load_export, start

cohort, launcher = start()
K, PATIENCE, MIN_DELTA, EVERY = 3, 4, 0.001, 3


def run(args, ranks=1, check=True):
    launch = [] if ranks == 1 else launcher + ["-np", str(ranks)]
    done = subprocess.run(launch + [cohort] + args, capture_output=True, text=True)
    if check and done.returncode != 0:
        fail(f"{' '.join(args)}: exit {done.returncode}: {done.stdout[-2000:]}{done.stderr[-1500:]}")
    return done


def train_args(run_dir, slow=0):
    return ["train", "--set", "data.path=train.h5", "--set", "data.val_path=val.h5",
            "--set", "data.batch_size=16", "--set", "model.hidden=32", "--set", "train.epochs=20",
            "--set", "train.max_steps=150", "--set", f"train.eval_every={EVERY}",
            "--set", "optim.lr=0.3", "--set", f"checkpoint.every_steps={EVERY}",
            "--set", "checkpoint.keep_last=1", "--set", "checkpoint.best_metric=loss",
            "--set", f"checkpoint.best_keep={K}", "--set", f"train.early_stop_patience={PATIENCE}",
            "--set", f"train.early_stop_min_delta={MIN_DELTA}", "--set", "debug.slow_rank=0",
            "--set", f"debug.slow_ms={slow}", "--set", f"train.run_dir={run_dir}"]


def records(run_dir):
    """metrics.jsonl's records, a restart's repeated steps replacing the earlier ones."""
    out = []
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("event") == "eval":
                out = [x for x in out if not (x.get("step", -1) >= r["step"] and
                                              x.get("event") in ("eval", "best", "early_stop"))]
            out.append(r)
    return out


def reference(evals):
    """Lightning's ModelCheckpoint(save_top_k=K, mode=min) and EarlyStopping(patience, min_delta)
    over (step, loss) in order: the best records [(step, kept steps)] and the stop step."""
    kept, best_records, best, since = [], [], None, 0
    for step, loss in evals:
        worst = max(kept, key=lambda e: (e[0], e[1])) if kept else None  # highest loss, later step
        if len(kept) < K or loss < worst[0]:
            if len(kept) == K:
                kept.remove(worst)
            kept.append((loss, step))
            kept.sort()
            best_records.append((step, [s for _, s in kept]))
        if best is None or loss < best - MIN_DELTA:
            best, since = loss, 0
        else:
            since += 1
        if since >= PATIENCE:
            return best_records, step
    return best_records, None


def checkpoint_dirs(run_dir):
    d = f"{run_dir}/checkpoints"
    return sorted(n for n in os.listdir(d) if n.startswith("step-") and not os.path.islink(f"{d}/{n}"))


def final_parameters(run_dir, name):
    run(["ckpt", "export", f"{run_dir}/checkpoints", "-o", name])
    return load_export(name)


run(["data", "make-synthetic", "--kind", "classification", "--samples", "640", "--features", "8",
     "--classes", "6", "--seed", "2", "--out", "all.h5"])
run(["data", "split", "all.h5", "--train", "train.h5", "--val", "val.h5", "--val-fraction", "0.25",
     "--seed", "1"])

# ---- A: uninterrupted, against the reference -----------------------------------------------
a_log = run(train_args("a"), ranks=2).stdout
ra = records("a")
evals = [(r["step"], r["loss"]) for r in ra if r["event"] == "eval"]
want_best, want_stop = reference(evals)
if want_stop is None or want_stop >= evals[-1][0] + EVERY:
    fail(f"run A did not stop early (evaluations {evals}): nothing tested")
got_best = [(r["step"], [s for s, _ in r["kept"]]) for r in ra if r["event"] == "best"]
if got_best != want_best:
    fail(f"best records {got_best}, the reference says {want_best}")
if len([r for r in ra if r["event"] == "best" and "evicted" in r]) == 0:
    fail("no checkpoint ever left the best K: the test's data is too easy")
stops = [r["step"] for r in ra if r["event"] == "early_stop"]
end = [r for r in ra if r["event"] == "end"][-1]
if stops != [want_stop] or end["stop_reason"] != "early stop" or end["steps"] != want_stop:
    fail(f"early stop at {stops}, end {end}; the reference stops at {want_stop}")
kept = want_best[-1][1]
on_disk = checkpoint_dirs("a")
want_dirs = sorted({f"step-{s:08d}" for s in kept} | {f"step-{want_stop:08d}"})
if on_disk != want_dirs:
    fail(f"run A keeps {on_disk}, expected the best {kept} and the latest {want_stop}")
if os.readlink("a/checkpoints/best") != f"step-{kept[0]:08d}":
    fail(f"a/checkpoints/best -> {os.readlink('a/checkpoints/best')}, the best is step {kept[0]}")
run(["ckpt", "export", "a/checkpoints/best", "-o", "best.pt"])
if not load_export("best.pt"):
    fail("the best checkpoint's export is empty")
print(f"run A: evaluations {[s for s, _ in evals]}, best {kept}, early stop at {want_stop}, "
      f"as the reference")
a_params = final_parameters("a", "a.pt")


def same_as_a(run_dir, what, since=0):
    """The run's evaluations from step `since` on, its best K, its early stop and its final
    parameters are run A's (its directory lacks A's checkpoints before `since`)."""
    r = records(run_dir)
    got = [(x["step"], x["loss"]) for x in r if x["event"] == "eval"]
    if got != [e for e in evals if e[0] >= since]:
        fail(f"{what}: evaluations {got} differ from run A's {evals}")
    last_best = [x for x in r if x["event"] == "best"][-1]
    dirs = [d for d in want_dirs if int(d[5:]) >= since]
    if [s for s, _ in last_best["kept"]] != kept or checkpoint_dirs(run_dir) != dirs:
        fail(f"{what}: kept {last_best['kept']} and {checkpoint_dirs(run_dir)}, run A {kept}")
    if [x["step"] for x in r if x["event"] == "early_stop"][-1:] != [want_stop]:
        fail(f"{what}: did not stop early at step {want_stop}")
    params = final_parameters(run_dir, f"{run_dir}.pt")
    differ = [k for k in a_params if not torch.equal(a_params[k], params[k])]
    if set(params) != set(a_params) or differ:
        fail(f"{what}: final parameters differ from run A's: {differ[:5]}")


# ---- B: SIGUSR1 after a checkpoint, started again ----------------------------------------------
def stopped_and_resumed(run_dir, after):
    """The run stopped by SIGUSR1 once a checkpoint after step `after` is committed, then started
    again; it must end as run A."""
    first = subprocess.Popen(launcher + ["-np", "2", cohort] + train_args(run_dir, slow=300),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if open(f"{run_dir}/checkpoints/latest").read().strip() > f"step-{after:08d}":
                break
        except OSError:
            pass
        time.sleep(0.05)
    pids = subprocess.run(["pgrep", "-f", f"train.run_dir={run_dir}( |$)"], capture_output=True,
                          text=True).stdout.split()
    ranks = [p for p in pids if int(p) != first.pid]
    if not ranks:
        fail(f"{run_dir}: no rank to signal")
    os.kill(int(ranks[-1]), signal.SIGUSR1)
    log = first.communicate(timeout=300)[0]
    if first.returncode != 75:
        fail(f"{run_dir} exited {first.returncode} after SIGUSR1, not 75: {log[-2000:]}")
    run(train_args(run_dir, slow=300), ranks=2)
    same_as_a(run_dir, f"{run_dir} (stopped by SIGUSR1 after step {after}, resumed)")


# Early: the next evaluations enter the best K. Late, after the last one that did: the resumed run
# saves only checkpoints outside the best K, whose retention must still keep the best ones.
last_entry = want_best[-1][0]
for run_dir, after in (("b", 9), ("b-late", last_entry)):
    stopped_and_resumed(run_dir, after)
    print(f"run {run_dir}: stopped after its step-{after} checkpoint, resumed, ends as run A")

# A metric the task does not report is refused before training.
done = run(train_args("mae") + ["--set", "checkpoint.best_metric=mae"], check=False)
if done.returncode != 2 or "checkpoint.best_metric = mae" not in done.stderr:
    fail(f"best_metric = mae on classification: exit {done.returncode}: {done.stderr[-500:]}")

# ---- C: from A's step-15 best checkpoint alone --------------------------------------------------
if 15 not in kept and not os.path.isdir("a/checkpoints/step-00000015"):
    fail(f"run A kept no step-15 checkpoint ({kept}): choose another step")
os.makedirs("c/checkpoints")
shutil.copytree("a/checkpoints/step-00000015", "c/checkpoints/step-00000015")
with open("c/checkpoints/latest", "w") as f:
    f.write("step-00000015\n")
c_log = run(train_args("c"), ranks=2).stdout
same_as_a("c", "run C (from the step-15 checkpoint, written before its evaluation)", since=15)
if "eval  step 15: again, its outcome was not in the checkpoint" not in c_log:
    fail(f"run C did not say it evaluated step 15 again: {c_log[-2000:]}")
print("OK: best checkpoints and early stopping as the reference decides; resumed runs (SIGUSR1; "
      "from a checkpoint written before its evaluation) end bit-identical to the uninterrupted one")
