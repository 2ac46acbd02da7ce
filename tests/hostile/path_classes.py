#!/usr/bin/python3
"""Every path option of every command against the path classes, found in the commands' own
option tables (issue 43: a test that finds the next command that skips the input, output and text
mechanisms). docs/testing-hostile-input.md, "The path-class test".

The forms (`cohort CMD [SUB [NESTED]]`) come from `cohort help` and each form's --help, as
scripts/cli-docs finds them; the path options are those --help shows with a path kind in place of
Boost's "arg" (src/cli/command.hpp, path_value): FILE, DIR and PATH are read, OUT and OUTDIR are
written. An option that looks like a path but is declared as "arg", a form with a path option no
baseline below uses, or a baseline that names an option the form lacks, fails the test: a new
command with a path option is tried without anyone adding it to a list of options, and cannot
be added without a baseline.

Each baseline is a valid invocation in a copy of one small world (datasets, sources, a trained
run, a TorchScript module, a tokenizer, ...). For each path option in it, one value at a time is
replaced by a path of a class, in a fresh copy of the world:
  fifo          a FIFO                                  refused (2 or 3), within the time bound
  directory     an empty directory                      FILE, OUT: refused; else 0 or refused
  dangling      a link to nothing                       refused
  outside-link  inputs: a link to a copy outside the    as the baseline
                world; OUT: a link to someone's file    0, the link replaced, the file unchanged
  odd-name      a non-UTF-8 name with an escape         as the baseline; nothing unprintable
                sequence in it (a copy of the input)    printed
  unwritable    OUT, OUTDIR: in a place that cannot     refused
                be written
  input         OUT: each input file of the baseline    refused (2), nothing changed
                by name and by a symbolic link
Every run holds the contract of docs/exit-codes.md: a documented exit code (never 1), one
`cohort: error:` line when it fails, an answer within the time bound, stdout and stderr valid
UTF-8 without an escape or other control character; and every file that existed before is
unchanged afterwards (content, kind, link target), except the outputs the run was given, and
nothing new appears outside them.
usage: path_classes.py COHORT WORKDIR REPO"""
import concurrent.futures
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import time

if len(sys.argv) != 4:
    raise SystemExit(__doc__.rsplit("usage: ", 1)[1])
COHORT, WORK, REPO = (os.path.abspath(a) for a in sys.argv[1:])
TIMEOUT = 120  # per run: a hang (a FIFO opened for reading) fails; a loaded CI machine does not
KINDS = {"FILE": "in", "DIR": "in", "PATH": "in", "OUT": "out", "OUTDIR": "out"}
# Not UTF-8 (an invalid byte, an overlong ESC), and an escape sequence that would clear a terminal.
ODD = b"odd-\xff\xc0\x9b-\x1b[2J"

# Options shown as "arg" whose name says they name a path: declare them with path_value().
PATHLIKE = re.compile(r"(^|-)(out|output|dir|path|file|files|input|inputs|config|data|dataset|"
                      r"model|checkpoint|template|tokenizer|plugin|workdir|torchscript|eval|to|"
                      r"train|val|run-dir|weights|init-from|source|dest|from|log|library|"
                      r"module|transform|corpus|prefix-dir|root|cache)$")
# ... and those whose help text says they name one.
PATHLIKE_HELP = re.compile(r"\b(file|files|directory|folder|path)\b", re.IGNORECASE)
# ... and those that are not paths, with the reason.
NOT_PATHS = {
    ("data import images", "val-fraction"): "a share (its help mentions the images' path)",
    ("data make-synthetic", "shards"): "a count (its help mentions the directory they make)",
}


def must(args, cwd):
    done = subprocess.run([COHORT] + args, cwd=cwd, capture_output=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"setup: cohort {' '.join(args)}: exit {done.returncode}: "
                         f"{done.stderr.decode(errors='replace')[-800:]}")
    return done.stdout


# --- the forms and their path options, from the commands' own --help -------------------------

def help_of(words):
    done = subprocess.run([COHORT] + list(words) + ["--help"], capture_output=True, timeout=60)
    return (done.stdout + done.stderr).decode(errors="replace")


def commands():
    text = subprocess.run([COHORT, "help"], capture_output=True, timeout=60).stdout.decode()
    names, on = [], False
    for line in text.splitlines():
        if line.startswith("commands:"):
            on = True
        elif on and not line.strip():
            break
        elif on and re.match(r"^  [a-z]", line) and line.split()[0] != "help":
            names.append(line.split()[0])
    return names


def subcommands(command, text):
    found = []
    for line in text.splitlines():
        m = re.match(rf"^(?:usage:)? *cohort {command} (\S+)", line)
        if not m:
            continue
        word = m.group(1)
        words = word[1:-1].split("|") if re.fullmatch(r"<[^>]*\|[^>]*>", word) else (
            [word] if re.fullmatch(r"[a-z][a-z-]*", word) else [])
        found += [w for w in words if w not in found]
    return found


HELP_TEXT = {}  # (form words, option): the option's help text, for PATHLIKE_HELP


def options(text, form=()):
    """{option: value name} of a --help text's option table ("arg" when not a path)."""
    found, last = {}, None
    for line in text.splitlines():
        m = re.match(r"^  +(?:-[a-zA-Z] \[ )?--([a-z0-9][a-z0-9-]*)(?: \])?(?: ([A-Za-z]+))?"
                     r"(?: \(=[^)]*\))?(.*)$", line)
        if m:
            last = m.group(1)
            found[last] = m.group(2) or ""
            HELP_TEXT[(form, last)] = m.group(3).strip()
        elif last and re.match(r"^ {10,}\S", line):  # the help text's next line
            HELP_TEXT[(form, last)] += " " + line.strip()
    return found


def forms():
    """{form words: {option: value name}} of every command, subcommand and nested form."""
    found = {}
    for command in commands():
        text = help_of([command])
        subs = subcommands(command, text)
        if not subs:
            found[(command,)] = options(text, (command,))
        for sub in subs:
            sub_text = help_of([command, sub])
            found[(command, sub)] = options(sub_text, (command, sub))
            for nested in re.findall(rf"see: {command} {sub} ([a-z-]+) --help", sub_text):
                found[(command, sub, nested)] = options(help_of([command, sub, nested]),
                                                        (command, sub, nested))
    return found


# --- the world every run starts from ---------------------------------------------------------

NET = """
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, 4)
    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x.flatten(1))))
torch.manual_seed(0)
torch.jit.script(Net()).save("net.pt")
import numpy
numpy.save("x.npy", numpy.arange(64, dtype=numpy.float32).reshape(16, 4))
numpy.save("y.npy", (numpy.arange(16) % 3).astype(numpy.int64))
from PIL import Image
import os
for label in ("cat", "dog"):
    os.makedirs(f"images/{label}")
    for i in range(4):
        Image.new("RGB", (12, 10), (40 * i, 200 if label == "cat" else 20, 90)).save(
            f"images/{label}/{i}.png")
"""


def idx_gz(path, dims, data):
    import gzip
    import struct
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, len(dims)) + struct.pack(f">{len(dims)}I", *dims))
        f.write(bytes(data))


def build_world(world):
    os.makedirs(world)
    must(["data", "make-synthetic", "--kind", "classification", "--samples", "64", "--features",
          "8", "--classes", "4", "--seed", "1", "--out", "set.h5"], world)
    must(["data", "make-synthetic", "--kind", "classification", "--samples", "32", "--features",
          "8", "--classes", "4", "--shards", "2", "--out", "shards"], world)
    with open(os.path.join(world, "data.csv"), "w") as f:
        f.write("".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(32)))
    with open(os.path.join(world, "corpus.txt"), "w") as f:
        f.write("".join(f"the cat {i} sat on the mat {i % 5} and the dog ran\n" for i in range(200)))
    with open(os.path.join(world, "labelled.txt"), "w") as f:
        f.write("".join(f"{i % 2}\tthe cat {i} sat on the mat\n" for i in range(40)))
    os.makedirs(os.path.join(world, "fmnist"))
    for prefix in ("train", "t10k"):
        idx_gz(os.path.join(world, f"fmnist/{prefix}-images-idx3-ubyte.gz"), [6, 4, 4],
               range(96))
        idx_gz(os.path.join(world, f"fmnist/{prefix}-labels-idx1-ubyte.gz"), [6], range(6))
    script = os.path.join(WORK, "make_net.py")  # TorchScript reads the module's source file
    with open(script, "w") as f:
        f.write(NET)
    subprocess.run(["/usr/bin/python3", script], cwd=world, check=True, timeout=600)
    must(["data", "tokenizer", "train", "corpus.txt", "--vocab", "40", "--out", "tok.model"], world)
    with open(os.path.join(world, "run.ini"), "w") as f:
        f.write("[data]\npath = set.h5\nbatch_size = 32\n"
                "[model]\nname = torchscript\nfile = net.pt\n"
                "[train]\nepochs = 1\nlog_every = 0\nrun_dir = run\n"
                "[checkpoint]\nevery_steps = 2\nkeep_last = 0\n")
    must(["train", "--config", "run.ini"], world)
    with open(os.path.join(world, "eval.json"), "wb") as f:
        f.write(must(["eval", "--checkpoint", "run/checkpoints", "--data", "set.h5", "--json"],
                     world))
    shutil.copy(os.path.join(REPO, "sbatch/train.sbatch"), os.path.join(world, "train.sbatch"))


# --- the baselines: one valid invocation per way a form is used ------------------------------
# Path values are given as options (--path X, not X) so that a class can replace them. `writes`:
# what a successful run also makes besides its OUT and OUTDIR values. `code`: its exit code when
# it is not 0 (outside a Slurm job).

def B(*args, writes=(), code=0, odd=None):
    """odd: what a name that is not UTF-8 must end in when not as the baseline."""
    return {"args": list(args), "writes": list(writes), "code": code, "odd": odd}


PREDICT = ("--data", "set.h5", "--out", "pred.h5")
BASELINES = {
    ("train",): [B("train", "--config", "run.ini", "--set", "train.run_dir=run2",
                   writes=["run2"]),
                 # A library that registers no model: refused as the baseline (exit 2) through
                 # every class, which shows the file was opened through the link or odd name.
                 B("train", "--config", "run.ini", "--plugin", "PLUGIN", "--set",
                   "train.run_dir=run3", writes=["run3"], code=2)],
    ("doctor",): [B("doctor", "--config", "run.ini", "--output", "doctor.json")],
    ("predict",): [B("predict", "--checkpoint", "run/checkpoints", *PREDICT),
                   B("predict", "--checkpoint", "run/checkpoints", "--config",
                     "run/config.resolved.ini", *PREDICT),
                   B("predict", "--model", "net.pt", *PREDICT)],
    ("eval",): [B("eval", "--checkpoint", "run/checkpoints", "--data", "set.h5"),
                B("eval", "--checkpoint", "run/checkpoints", "--config",
                  "run/config.resolved.ini", "--data", "shards"),
                B("eval", "--model", "net.pt", "--data", "set.h5")],
    ("config", "check"): [B("config", "check", "--file", "run.ini"),
                          B("config", "check", "--file", "run.ini", "--plugin", "PLUGIN",
                            code=2)],
    ("data", "make-synthetic"): [B("data", "make-synthetic", "--samples", "16", "--features", "4",
                                   "--out", "syn.h5")],
    ("data", "import"): [
        B("data", "import", "--format", "csv", "--input", "data.csv", "--out", "csv.h5"),
        B("data", "import", "--format", "npy", "--input", "x.npy", "y.npy", "--out", "npy.h5"),
        B("data", "import", "--format", "text", "--input", "corpus.txt", "--tokenizer",
          "tok.model", "--seq-len", "8", "--out", "text.h5"),
        B("data", "import", "--format", "labelled-text", "--input", "labelled.txt",
          "--tokenizer", "tok.model", "--seq-len", "8", "--out", "labelled.h5"),
        B("data", "import", "--format", "fashion-mnist", "--input", "fmnist", "--out", "fm.h5")],
    ("data", "import", "images"): [B("data", "import", "images", "--dir", "images", "--size", "8",
                                     "--val-fraction", "0.5", "--out", "img.h5", "--val-out",
                                     "img-val.h5")],
    ("data", "inspect"): [B("data", "inspect", "--path", "set.h5"),
                          B("data", "inspect", "--path", "shards")],
    ("data", "split"): [B("data", "split", "--path", "set.h5", "--train", "tr.h5", "--val",
                          "va.h5")],
    ("data", "select"): [B("data", "select", "--path", "set.h5", "--classes", "0,1", "--out",
                           "sel.h5")],
    # A staged path is read from stdout by scripts: one that would not print is refused.
    ("data", "stage"): [B("data", "stage", "--path", "set.h5", "--to", "staged", odd="refused2")],
    ("data", "checksum"): [B("data", "checksum", "--file", "set.h5")],
    ("data", "tokenizer", "train"): [B("data", "tokenizer", "train", "--input", "corpus.txt",
                                       "--vocab", "40", "--out", "tok2.model",
                                       writes=["tok2.vocab"])],
    ("ckpt", "list"): [B("ckpt", "list", "--path", "run/checkpoints")],
    ("ckpt", "inspect"): [B("ckpt", "inspect", "--path", "run/checkpoints")],
    ("ckpt", "verify"): [B("ckpt", "verify", "--path", "run/checkpoints")],
    ("ckpt", "export"): [B("ckpt", "export", "--path", "run/checkpoints", "--out", "w.pt"),
                         B("ckpt", "export", "--path", "run/checkpoints", "--torchscript",
                           "net.pt", "--out", "ts.pt")],
    ("report",): [B("report", "--run-dir", "run", "--eval", "eval.json", "--output", "rep.html")],
    ("top",): [B("top", "--run-dir", "run", "--once")],
    ("submit",): [B("submit", "--config", "run.ini", "--template", "train.sbatch", "--dry-run")],
    # Outside a job there is nothing to requeue: stopped to be resumed (75), said in its run.
    ("slurm", "requeue"): [B("slurm", "requeue", "--config", "run.ini", "--set",
                             "train.run_dir=rq", writes=["rq"], code=75)],
    ("supervise",): [B("supervise", "--config", "run.ini", "--set", "train.run_dir=sup",
                       writes=["sup"])],
    ("bench", "io"): [B("bench", "io", "--dataset", "set.h5", "--rounds", "1", "--batch", "8",
                        "--steps", "2"),
                      B("bench", "io", "--workdir", "bio", "--samples", "64", "--image-size", "8",
                        "--rounds", "1", "--batch", "8", "--steps", "2")],
    ("bench", "ckpt"): [B("bench", "ckpt", "--dir", "bck", "--hidden", "8", "--features", "4",
                          "--rounds", "1")],
    ("bench", "monitor"): [B("bench", "monitor", "--dir", "bmon", "--hidden", "8", "--steps",
                             "11", "--rounds", "1")],
    ("bench", "control"): [B("bench", "control", "--dir", "bctl", "--tensors", "2", "--repeats",
                             "1")],
}


# --- one run and its contract ----------------------------------------------------------------

def snapshot(roots):
    seen = {}
    for root in roots:
        for top, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(top, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    seen[path] = ("link", os.readlink(path))
                elif stat.S_ISDIR(st.st_mode):
                    seen[path] = ("dir",)
                elif stat.S_ISREG(st.st_mode):
                    with open(path, "rb") as f:
                        seen[path] = ("file", hashlib.sha256(f.read()).hexdigest())
                else:
                    seen[path] = ("other", stat.S_IFMT(st.st_mode))
    return seen


def allowed_change(path, places, added):
    """Whether a change at path is a run's own: places are (how, byte path): 'tree' (the path or
    anything under it), 'new' (an entry added under it), 'stem' (an entry added whose name starts
    with it: NAME.vocab beside NAME.model)."""
    for how, place in places:
        inside = path.startswith(place.rstrip(b"/") + b"/")
        if how == "tree" and (path == place or inside):
            return True
        if added and ((how == "new" and inside) or (how == "stem" and path.startswith(place))):
            return True
    return False


def unprintable(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at byte {e.start}"
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0]
    return f"control character {ord(bad[0]):#x}" if bad else None


def check_run(expect, args, cwd, outputs, roots):
    """Runs cohort ARGS in cwd; returns the problems. expect: 'refused' (2 or 3), 'refused2',
    'either' (0, 2 or 3), or an exit code. outputs: the places a run may change
    (allowed_change)."""
    before = snapshot(roots)
    started = time.monotonic()
    try:
        done = subprocess.run([COHORT] + args, cwd=cwd, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return [f"no answer within {TIMEOUT} s (a hang)"], None
    seconds = time.monotonic() - started
    problems = []
    code = done.returncode
    allowed = {"refused": {2, 3}, "refused2": {2}, "either": {0, 2, 3}}.get(expect, {expect})
    if code not in allowed:
        problems.append(f"exit {code}, expected {sorted(allowed)}")
    errors = [l for l in done.stderr.split(b"\n") if l.startswith(b"cohort: error:")]
    if code in (2, 3) and len(errors) != 1:
        problems.append(f"{len(errors)} error lines")
    for name, data in (("stdout", done.stdout), ("stderr", done.stderr)):
        why = unprintable(data)
        if why:
            problems.append(f"{name}: {why}")
    after = snapshot(roots)
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path) or \
                allowed_change(path, outputs, path not in before):
            continue
        what = "removed" if path not in after else "added" if path not in before else "changed"
        problems.append(f"{path.decode(errors='replace')} {what}")
        break
    last = (errors or done.stderr.strip().split(b"\n") or [b""])[-1]
    return problems, (code, seconds, last.decode(errors="replace")[:160])


# --- the classes ------------------------------------------------------------------------------

def printable_name(name):
    """A name as io::printable shows it: each byte that is not UTF-8 or a control a '?'."""
    out = []
    for ch in name:
        if 0xDC80 <= ord(ch) <= 0xDCFF or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def suffix(value):
    base = os.path.basename(value.rstrip("/"))
    return base[base.rfind("."):] if "." in base[1:] else ""


def sibling(value, name):
    """A path in the same directory as value (a relative path keeps what it resolves beside it,
    such as a checkpoint directory's config.resolved.ini)."""
    parent = os.path.dirname(value.rstrip("/"))
    return os.path.join(parent, name) if parent else name


def copy_of(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst)


def cases_for(baseline, kind, position, inputs):
    """(class, expectation, prepare) for one value of a path option: prepare(case_dir) makes the
    path, returns (value, extra places that may change)."""
    value = baseline["args"][position]
    end = suffix(value)
    same = baseline["code"]
    found = []

    def fifo(d):
        path = sibling(value, "fifo" + end)
        os.mkfifo(os.path.join(d, path))
        return path, []

    def directory(d):
        path = sibling(value, "folder" + end)
        os.makedirs(os.path.join(d, path))
        return path, []

    def dangling(d):
        path = sibling(value, "gone" + end)
        os.symlink("nowhere/at/all" + end, os.path.join(d, path))
        return path, []

    found += [("fifo", "refused", fifo)]
    found += [("directory", "refused" if kind in ("FILE", "OUT") else "either", directory)]
    found += [("dangling", "refused", dangling)]
    if KINDS[kind] == "in":
        def outside(d):
            target = os.path.join(d, "..", "outside", "copy" + end)
            copy_of(os.path.join(d, value), target)
            path = sibling(value, "linked" + end)
            os.symlink(os.path.abspath(target), os.path.join(d, path))
            return path, []

        def odd(d):
            path = sibling(value, os.fsdecode(ODD) + end)  # str, its bytes as surrogates
            copy_of(os.path.join(d, value), os.path.join(d, path))
            return path, []
        found += [("outside-link", same, outside), ("odd-name", baseline["odd"] or same, odd)]
    else:
        def outside(d):
            victim = os.path.join(d, "..", "outside", "victim" + end)
            if kind == "OUTDIR":
                os.makedirs(victim)
                victim_file = os.path.join(victim, "keep.txt")
            else:
                victim_file = victim
            with open(victim_file, "wb") as f:
                f.write(b"someone else's file\n")
            path = sibling(value, "linked" + end)
            os.symlink(os.path.abspath(victim), os.path.join(d, path))
            # An OUTDIR reached through a link may gain new entries; its file stays as it was.
            return path, [("new", os.path.abspath(victim))] if kind == "OUTDIR" else []

        def odd(d):
            return sibling(value, os.fsdecode(ODD) + end), []

        def unwritable(d):
            if os.geteuid() == 0:  # root writes through permissions: a read-only file system
                return "/proc/self/cohort-test" + end, []
            place = os.path.join(d, "readonly")
            os.makedirs(place)
            os.chmod(place, 0o555)
            return os.path.join("readonly", "out" + end), []

        found += [("outside-link", same if kind == "OUT" else "either", outside),
                  ("odd-name", baseline["odd"] or same, odd), ("unwritable", "refused", unwritable)]
        if kind == "OUT":
            for source in inputs:
                found.append((f"input {source}", "refused2", lambda d, s=source: (s, [])))

                def link_to(d, s=source):
                    path = sibling(value, "to-input" + end)
                    os.symlink(os.path.abspath(os.path.join(d, s)), os.path.join(d, path))
                    return path, []
                found.append((f"link to input {source}", "refused2", link_to))
    return found


def substitute(args, position, value):
    argv = [os.fsencode(a) for a in args]
    if position is not None:
        argv[position] = os.fsencode(value)
    return argv


def run_job(job, world, scratch):
    """One run in a fresh copy of the world under scratch: (name, problems, result)."""
    case = os.path.join(scratch, "world")
    shutil.copytree(world, case, symlinks=True)
    os.makedirs(os.path.join(scratch, "outside"))
    value, extra = job["prepare"](case) if job["prepare"] else (None, [])
    roots = [os.fsencode(p) for p in (case, os.path.join(scratch, "outside"), world)]
    # A refused run may change nothing; another its outputs (and the value it was given when
    # that is an output: a new file where the link was).
    places = []
    if job["expect"] not in ("refused", "refused2"):
        places = [("tree", os.fsencode(os.path.join(case, p))) for p in job["outputs"]]
        places += [(how, os.fsencode(p)) for how, p in extra]
        if value is not None and job["output"]:
            given = os.path.join(os.fsencode(case), os.fsencode(value))
            places += [("tree", given), ("stem", os.path.splitext(given)[0] + b".")]
    problems, result = check_run(job["expect"], substitute(job["args"], job["position"], value),
                                 case, places, roots)
    if result and result[0] in (2, 3) and value is not None and job["expect"] in (
            "refused", "refused2"):
        # The one line names what it refuses (as the terminal shows it: printable).
        shown = printable_name(os.path.basename(os.fsdecode(value).rstrip("/")))
        if shown not in result[2]:
            problems.append(f"the error line does not name {shown!r}")
    for top, dirs, _ in os.walk(scratch):  # a read-only place must not stop the clean-up
        for d in dirs:
            os.chmod(os.path.join(top, d), 0o755)
    shutil.rmtree(scratch, ignore_errors=True)
    return job["name"], problems, result


def execute(jobs, world, first):
    workers = int(os.environ.get("COHORT_PATH_CLASSES_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_job, job, world, os.path.join(WORK, f"case-{first + n}"))
                   for n, job in enumerate(jobs)]
        return [f.result() for f in futures]


def value_positions(args, paths):
    """(option, kind, index) of every path value in args: each value of --input (a list), the
    one value of the others."""
    found = []
    for i, a in enumerate(args):
        if a.startswith("--") and a[2:] in paths:
            j = i + 1
            while j < len(args) and not args[j].startswith("--"):
                found.append((a[2:], paths[a[2:]], j))
                j += 1
                if a[2:] != "input":
                    break
    return found


def plan(table, world):
    """The baselines and the hostile cases of every form, and the failures of the table itself
    (an undeclared path option, a form or option without a baseline)."""
    failures, baselines, cases, tried = [], [], [], set()
    for form, opts in sorted(table.items()):
        label = " ".join(form)
        for option, kind in opts.items():
            says = PATHLIKE.search(option) or PATHLIKE_HELP.search(HELP_TEXT.get((form, option), ""))
            if kind and kind not in KINDS and says and (label, option) not in NOT_PATHS:
                failures.append(f"{label} --{option}: looks like a path but its --help shows "
                                f"'{kind}': declare it with path_value(), or list it in "
                                "NOT_PATHS with the reason")
        paths = {o: k for o, k in opts.items() if k in KINDS}
        if not paths:
            continue
        if form not in BASELINES:
            failures.append(f"{label}: takes paths ({', '.join('--' + o for o in paths)}) but "
                            "has no baseline in path_classes.py")
            continue
        used = set()
        for index, base in enumerate(BASELINES[form]):
            args = [a.replace("PLUGIN", "plugin.so") for a in base["args"]]
            for a in args:
                if a.startswith("--") and a[2:] not in opts:
                    failures.append(f"{label} [{index}]: gives --{a[2:]}, which --help lacks")
            positions = value_positions(args, paths)
            used |= {o for o, _, _ in positions}
            outputs = [args[j] for _, k, j in positions if KINDS[k] == "out"] + base["writes"]
            inputs = [args[j] for _, k, j in positions
                      if KINDS[k] == "in" and os.path.isfile(os.path.join(world, args[j]))]
            key = f"{label} [{index}]"
            baselines.append({"name": f"{key} baseline", "key": key, "args": args,
                              "position": None, "prepare": None, "outputs": outputs,
                              "output": False,
                              "expect": "either" if base["code"] is None else base["code"]})
            for option, kind, j in positions:
                tried.add((label, option))
                for cls, expect, prepare in cases_for(dict(base, args=args), kind,
                                                      j, inputs):
                    cases.append({"name": f"{key} --{option} {cls}", "key": key, "args": args,
                                  "position": j, "prepare": prepare, "expect": expect,
                                  "outputs": [o for o in outputs if o != args[j]],
                                  "output": KINDS[kind] == "out"})
        failures += [f"{label} --{o}: a path option no baseline uses" for o in paths
                     if o not in used]
    # A baseline whose form --help no longer shows (a changed help format would drop them all).
    failures += [f"{' '.join(f)}: a baseline for a form that --help does not show"
                 for f in BASELINES if f not in table]
    return failures, baselines, cases, tried


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    world = os.path.join(WORK, "world")
    build_world(world)
    # A plugin that loads: the test plugin when the build made one, else any shared library.
    built = os.path.join(os.path.dirname(COHORT), "tests/hostile/libcohort_test_plugin.so")
    shutil.copy(built if os.path.exists(built) else "/lib/x86_64-linux-gnu/libm.so.6",
                os.path.join(world, "plugin.so"))
    failures, baselines, cases, tried = plan(forms(), world)
    # Baselines first: a class expected to end as its baseline ends with the baseline's code.
    results = execute(baselines, world, 0)
    codes = {job["key"]: (result or (None,))[0] for job, (_, _, result) in zip(baselines, results)}
    for job in cases:
        if job["expect"] is None:
            job["expect"] = codes[job["key"]]
    results += execute(cases, world, len(baselines))
    forms_run = set()
    for name, problems, result in results:
        code, seconds, last = result if result else (None, 0.0, "")
        print(f"{'FAIL' if problems else 'ok  '} {name}: exit {code}, {seconds:.1f} s"
              f"{': ' + last if code not in (0, None) else ''}")
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}")
        forms_run.add(name.split(" [")[0])
    print(f"{len(results)} runs: {len(forms_run)} forms, {len(tried)} path options, "
          f"{len(baselines)} baselines, {len(cases)} hostile paths")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        raise SystemExit(1)
    print("every path option of every command holds the contract")


main()
