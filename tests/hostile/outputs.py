#!/usr/bin/python3
"""Every writing command's outputs against hostile paths, through the real `cohort` (issue 43: one
way out, io::OutputPlan and io::TemporaryFile).

For each command that writes a file (dataset tools, tokenizer, export, predict, report, doctor)
the output is given as: the command's own input, a hard link and a symbolic link to it, a
directory, a FIFO, a link to nothing, a file in a missing directory. Each must be refused before
anything is written: exit 2, one `cohort: error:` line saying what the path is, and every file of
the work directory unchanged (a snapshot of names, kinds, link targets and contents, before and
after). Then an output that is a symbolic link to a file outside everything: the command succeeds,
the link is replaced by the new file, and the file it pointed to is unchanged. Last, a run whose
metrics.jsonl is a link to someone's file: the run refuses it and the file is unchanged.
usage: outputs.py COHORT WORKDIR"""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract as hostile  # noqa: E402

contract = hostile.start("outputs.py COHORT WORKDIR")
cohort = contract.cohort
run, fail = contract.run, contract.fail


def must(args):
    subprocess.run([cohort] + args, check=True, capture_output=True, timeout=300)


def snapshot(root="."):
    """Every entry under root: kind, link target or content digest (rss.txt, the contract's own
    measurement, left out)."""
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            if path == "./rss.txt":
                continue
            if os.path.islink(path):
                seen[path] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                seen[path] = ("dir",)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    seen[path] = ("file", hashlib.sha256(f.read()).hexdigest())
            else:
                seen[path] = ("other", os.stat(path).st_mode)
    return seen


def changes(before, after, allowed=()):
    allowed = {os.path.join(".", a) if not a.startswith("./") else a for a in allowed}
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k) and k not in allowed)


# Inputs: a classification set, a CSV, a corpus (its name ends .model, so that the tokenizer's
# output can name it), a run with checkpoints and metrics, a config, and a victim outside them all.
must(["data", "make-synthetic", "--kind", "classification", "--samples", "256", "--features", "8",
      "--classes", "4", "--seed", "1", "--out", "set.h5"])
with open("data.csv", "w") as f:
    f.write("".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(64)))
with open("corpus.model", "w") as f:
    f.write("".join(f"the cat {i} sat on the mat {i % 5} and the dog ran\n" for i in range(300)))
with open("run.ini", "w") as f:
    f.write("[data]\npath = set.h5\nbatch_size = 32\n[model]\nhidden = 8\n"
            "[train]\nepochs = 1\nlog_every = 0\nrun_dir = run\n"
            "[checkpoint]\nevery_steps = 4\nkeep_last = 0\n")
must(["train", "--config", "run.ini"])
STEP = sorted(d for d in os.listdir("run/checkpoints") if d.startswith("step-"))[-1]
SHARD = f"run/checkpoints/{STEP}/" + next(n for n in sorted(os.listdir(f"run/checkpoints/{STEP}"))
                                          if n.endswith(".h5"))
os.makedirs("outside", exist_ok=True)
with open("outside/victim.h5", "wb") as f:
    f.write(b"someone else's file\n")

# (name, the command with OUT where its output goes, the input an output may try to be (None: it
#  reads none), what a successful run also writes).
COMMANDS = [
    ("make-synthetic", ["data", "make-synthetic", "--samples", "16", "--features", "4",
                        "--out", "OUT"], None, []),
    ("import csv", ["data", "import", "csv", "data.csv", "--out", "OUT"], "data.csv", []),
    ("import text", ["data", "import", "text", "corpus.model", "--seq-len", "8", "--out", "OUT"],
     "corpus.model", []),
    ("split", ["data", "split", "set.h5", "--train", "OUT", "--val", "val.h5"], "set.h5",
     ["val.h5"]),
    ("select", ["data", "select", "set.h5", "--classes", "0,1", "--out", "OUT"], "set.h5", []),
    ("tokenizer train", ["data", "tokenizer", "train", "corpus.model", "--vocab", "40",
                         "--out", "OUT"], "corpus.model", []),
    ("ckpt export", ["ckpt", "export", "run/checkpoints", "--out", "OUT"], SHARD, []),
    ("predict", ["predict", "--checkpoint", "run/checkpoints", "--data", "set.h5", "--out", "OUT"],
     "set.h5", []),
    ("report", ["report", "run", "--output", "OUT"], "run/metrics.jsonl", []),
    ("doctor", ["doctor", "--config", "run.ini", "--output", "OUT"], "run.ini", []),
]


def suffix_of(name):
    """A name the command accepts for its output (the tokenizer's ends .model, an export's .h5)."""
    return ".model" if name == "tokenizer train" else ".h5"


def with_out(args, out):
    return [out if a == "OUT" else a for a in args]


def refused(case, args, needle):
    before = snapshot()
    run(case, args, 2, [needle], timeout=120)
    moved = changes(before, snapshot())
    if moved:
        fail(f"{case}: a refused command changed {moved[:5]}")


runs = 0
for name, args, source, extra in COMMANDS:
    end = suffix_of(name)
    os.makedirs("cases", exist_ok=True)
    if source:
        hard, soft = f"cases/hard-{runs}{end}", f"cases/soft-{runs}{end}"
        os.link(source, hard)
        os.symlink(os.path.abspath(source), soft)
        refused(f"{name}: OUT is its input", with_out(args, source), "is the same file as")
        refused(f"{name}: OUT is a hard link to its input", with_out(args, hard),
                "is the same file as")
        refused(f"{name}: OUT is a link to its input", with_out(args, soft), "is the same file as")
        runs += 3
    folder, fifo, dangling = f"cases/dir-{runs}{end}", f"cases/fifo-{runs}{end}", f"cases/gone-{runs}{end}"
    os.makedirs(folder)
    os.mkfifo(fifo)
    os.symlink("nowhere/at/all.h5", dangling)
    refused(f"{name}: OUT is a directory", with_out(args, folder), "a directory")
    refused(f"{name}: OUT is a FIFO", with_out(args, fifo), "a FIFO")
    refused(f"{name}: OUT is a link to nothing", with_out(args, dangling), "which does not exist")
    refused(f"{name}: OUT is in a missing directory", with_out(args, f"missing/out{end}"),
            "does not exist")
    runs += 4

    # A link to a file outside everything: replaced by the output, the file it named untouched.
    target = f"outside/victim{end}"
    with open(target, "wb") as f:
        f.write(b"someone else's file\n")
    out = f"cases/link-{name.replace(' ', '-')}{end}"
    os.symlink(os.path.abspath(target), out)
    before = snapshot()
    if name == "doctor":  # its checks decide its exit code (80-86), not the output
        proc = subprocess.run([cohort] + with_out(args, out), capture_output=True, timeout=300)
        ok = os.path.isfile(out) and not os.path.islink(out)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: OUT is a link to an outside file: exit "
              f"{proc.returncode}, report written in its place: {ok}")
        if not ok:
            fail(f"{name}: the report did not replace the link ({proc.stderr.decode()[-200:]})")
    else:
        run(f"{name}: OUT is a link to an outside file", with_out(args, out), 0, timeout=300)
    runs += 1
    allowed = [out] + extra + ([out[:-6] + ".vocab"] if end == ".model" else [])
    allowed += [f"run/{f}" for f in ("report.html",)] if name == "report" else []
    moved = changes(before, snapshot(), allowed)
    if moved:
        fail(f"{name}: writing through a link changed {moved[:5]}")
    if os.path.islink(out) or not os.path.isfile(out):
        fail(f"{name}: the output link was not replaced by a file")
    with open(target, "rb") as f:
        if f.read() != b"someone else's file\n":
            fail(f"{name}: the file the output link named was written")

# Two outputs of one command that are one file.
refused("split: --train and --val are one file", ["data", "split", "set.h5", "--train", "a.h5",
                                                  "--val", "./a.h5"], "is the same file as")
refused("ckpt export: two --out are one file", ["ckpt", "export", "run/checkpoints", "--out",
                                               "b.h5", "--out", "cases/../b.h5"], "is the same file as")
runs += 2

# Outputs against what a command reads through its config or inside an input directory, and a
# training's own outputs against its inputs and each other (each refused, nothing changed).
os.makedirs("shards", exist_ok=True)
must(["data", "make-synthetic", "--kind", "classification", "--samples", "64", "--features", "8",
      "--classes", "4", "--shards", "2", "--out", "shards"])
for case, args, needle in [
        ("predict over the run's config", ["predict", "--checkpoint", "run/checkpoints", "--data",
                                           "set.h5", "--out", "run/config.resolved.ini"],
         "is the same file as the run's config"),
        ("doctor over the training's dataset", ["doctor", "--config", "run.ini", "--output",
                                                "set.h5"], "is the same file as data.path"),
        ("split into the shard directory it reads", ["data", "split", "shards", "--train",
                                                     "shards/train.h5", "--val", "v.h5"],
         "is inside PATH"),
        ("export into the checkpoint it reads", ["ckpt", "export", "run/checkpoints", "--out",
                                                 f"run/checkpoints/{STEP}/model.pt"],
         "is inside PATH"),
        ("stage a file over itself", ["data", "stage", "set.h5", "--to", "."],
         "is the same file as SOURCE"),
        ("train: monitor.prom_file over the run's metrics", ["train", "--config", "run.ini", "--set",
                                                            "monitor.prom_file=metrics.jsonl"],
         "monitor.prom_file is the same file as the run's metrics.jsonl"),
        ("train: monitor.prom_file over the dataset", ["train", "--config", "run.ini", "--set",
                                                      "monitor.prom_file=../set.h5"],
         "monitor.prom_file is the same file as data.path"),
        ("train: the run directory is the dataset's", ["train", "--config", "run.ini", "--set",
                                                      "data.path=shards", "--set",
                                                      "train.run_dir=shards"],
         "train.run_dir is the same file as data.path")]:
    refused(case, args, needle)
    runs += 1

# A run directory whose metrics.jsonl is a link to someone's file: refused, the file unchanged.
os.makedirs("linked", exist_ok=True)
os.symlink(os.path.abspath("outside/victim.h5"), "linked/metrics.jsonl")
before = snapshot()
run("train: metrics.jsonl is a link", ["train", "--config", "run.ini", "--set",
                                       "train.run_dir=linked"], 3, ["a symbolic link"], timeout=120)
runs += 1
moved = [c for c in changes(before, snapshot()) if not c.startswith("./linked/")]
if moved:
    fail(f"train with a linked metrics.jsonl changed {moved[:5]}")
with open("outside/victim.h5", "rb") as f:
    if f.read() != b"someone else's file\n":
        fail("train wrote through a linked metrics.jsonl")

print(f"{runs} hostile outputs over {len(COMMANDS)} writing commands")
contract.verdict("writing commands")
