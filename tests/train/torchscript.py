"""model.name = torchscript against PyTorch itself (Debian's /usr/bin/python3 torch).

Modules written here in Python are scripted (or traced) and saved; Python then trains each for
20 steps with a plain loop from the saved file's own weights (torch.jit.load), in the order of
torch's DistributedSampler, while `cohort train` trains the same file on 1 rank (batch 32) and on
2 ranks (16 each). The parameters Cohort's last checkpoint holds (exported with `cohort ckpt
export`, named as the module's state_dict names them) must equal Python's within 1e-5 (and, on
one rank, BatchNorm's running statistics too).

The 2-rank reference is one process computing each rank's half-batch separately (its own
BatchNorm batch statistics, as a DDP rank without SyncBatchNorm has) and averaging the two
losses, which is what DDP's averaged gradients are. Models: an nn.Sequential MLP (scripted), a
CNN with BatchNorm (scripted), a traced MLP, a scripted MLP with a data-dependent branch, and a
module taking Dict[str, Tensor] on a field dataset written by h5py (ragged token ids, padded per
rank with their mask, and features; the Python side pads as the loader documents); SGD with
momentum for all, AdamW for the first two and the last. The Sequential also as 2 pipeline stages
(and the CNN refused as stages). Then the bad inputs: a pickled state_dict,
random bytes, a forward() of two arguments, a missing file, and a Tensor module on the field
set (and the reverse) are each refused in one line
naming the file, exit 2. Each 1-rank run is exported back as TorchScript (`cohort ckpt export
--torchscript`), which torch.jit.load runs with outputs within 1e-6 of PyTorch's trained module;
exporting into a module it did not train is refused. The run keeps a copy of its module beside
its checkpoints: resuming with another module is refused (naming the first difference), with
the copy, the same file or the same module saved again (other bytes) it
resumes, and `ckpt export --run-module` exports into the copy.

Usage: torchscript.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import os
import subprocess
import sys

from typing import Dict

import h5py
import numpy as np
import torch

from torch_ref import Cnn, fail, load_export, start, train_loop

cohort, launcher = start()
STEPS, BATCH, SEED, N = 20, 32, 3, 512


# A learnable rule: the class is the position of the largest of the first ten pixels.
rng = np.random.default_rng(7)
x = rng.standard_normal((N, 1, 8, 8)).astype(np.float32)
y = x.reshape(N, -1)[:, :10].argmax(1).astype(np.int64)
with h5py.File("set.h5", "w") as f:
    f["inputs"] = x
    f["targets"] = y
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10

# A field dataset (format 2, written by h5py alone): ragged token ids (0 to 12 per sample) and 4
# float features; the class is the largest feature's position plus 4 if sample's first token is
# odd (an empty sample: plus 0).
lengths = rng.integers(0, 13, N)
offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
tokens = rng.integers(0, 50, int(offsets[-1])).astype(np.int32)
features = rng.standard_normal((N, 4)).astype(np.float32)
first_odd = np.array([lengths[i] > 0 and tokens[offsets[i]] % 2 == 1 for i in range(N)])
labels = (features.argmax(1) + 4 * first_odd).astype(np.int64)
with h5py.File("fields.h5", "w") as f:
    f.attrs["format_version"] = 2
    f.attrs["classes"] = 8
    g = f.create_group("inputs/tokens")
    g["values"], g["offsets"] = tokens, offsets
    g.attrs["vocab_size"] = 50
    f["inputs/features"] = features
    f["targets/label"] = labels


def field_batch(idx):
    """What Cohort's loader gives a module for these samples: every input by name, the ragged
    one padded with zeros to the batch's longest sample and followed by its mask."""
    longest = max(int(lengths[i]) for i in idx)
    ids = torch.zeros(len(idx), longest, dtype=torch.int64)
    mask = torch.zeros(len(idx), longest, dtype=torch.bool)
    for row, i in enumerate(idx):
        n = int(lengths[i])
        ids[row, :n] = torch.from_numpy(tokens[offsets[i]:offsets[i] + n].astype(np.int64))
        mask[row, :n] = True
    return {"tokens": ids, "tokens_mask": mask, "features": torch.from_numpy(features[idx])}


class Fields(torch.nn.Module):
    """Takes the batch by name: a bag of embeddings over the mask, beside the features."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.head = torch.nn.Linear(8 + 4, 8)

    def forward(self, x: Dict[str, torch.Tensor]) -> torch.Tensor:
        mask = x["tokens_mask"].unsqueeze(-1).to(torch.float32)
        bag = (self.embed(x["tokens"]) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(torch.cat([bag, x["features"]], 1))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 24)
        self.out = torch.nn.Linear(24, 10)

    def forward(self, x):
        return self.out(torch.tanh(self.fc(x.flatten(1))))


class Branch(Mlp):
    def forward(self, x):
        h = self.fc(x.flatten(1))
        if bool(h.mean() > 0):  # data-dependent control flow: only scripting keeps it
            h = torch.relu(h)
        else:
            h = torch.tanh(h)
        return self.out(h)


torch.manual_seed(SEED)
seq = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                          torch.nn.Linear(32, 10))
torch.jit.script(seq).save("seq.pt")
torch.jit.script(Cnn()).save("cnn.pt")
torch.jit.trace(Mlp(), torch.zeros(2, 1, 8, 8)).save("traced.pt")
torch.jit.script(Branch()).save("branch.pt")
torch.jit.script(Fields()).save("fields.pt")
DATA = {"fields.pt": ("fields.h5", field_batch, labels)}


def inputs_of(model_file):
    """The module's data set, its input for given sample indices, and the labels."""
    return DATA.get(model_file, ("set.h5", lambda idx: torch.from_numpy(x[idx]), y))


def reference(model_file, optimizer, world):
    module = torch.jit.load(model_file)
    module.train()
    params = list(module.parameters())
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=0.003, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    _, batch_of, target = inputs_of(model_file)
    train_loop(opt, STEPS, N, BATCH, world, SEED, lambda idx: torch.nn.functional.cross_entropy(
        module(batch_of(idx)), torch.from_numpy(target[idx])))
    state = {k: v.detach().clone() for k, v in module.named_parameters()}
    if world == 1:  # BatchNorm's running statistics too (2 ranks: each rank keeps its own)
        state.update({k: v.detach().clone() for k, v in module.named_buffers()})
    reference.module = module
    return state


def cohort_run(model_file, optimizer, world, run, stages=1):
    launch = [] if world * stages == 1 else launcher + ["-np", str(world * stages)]
    lr = "0.05" if optimizer == "sgd" else "0.003"
    cmd = launch + [cohort, "train", "--set", "model.name=torchscript",
                    "--set", f"model.file={model_file}",
                    "--set", f"data.path={inputs_of(model_file)[0]}", "--set", f"data.batch_size={BATCH // world}", "--set", f"optim.name={optimizer}",
                    "--set", f"optim.lr={lr}", "--set", "optim.momentum=0.9",
                    "--set", f"train.seed={SEED}", "--set", f"train.max_steps={STEPS}",
                    "--set", "train.epochs=10", "--set", "train.log_every=0",
                    "--set", f"checkpoint.every_steps={STEPS}", "--set", f"train.run_dir={run}",
                    "--set", f"parallel.pipeline_stages={stages}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{run}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    out = f"{run}.pt"
    subprocess.run([cohort, "ckpt", "export", f"{run}/checkpoints", "-o", out], check=True,
                   capture_output=True)
    return load_export(out)


cases = [("seq.pt", "sgd"), ("seq.pt", "adamw"), ("cnn.pt", "sgd"), ("cnn.pt", "adamw"),
         ("traced.pt", "sgd"), ("branch.pt", "sgd"), ("fields.pt", "sgd"), ("fields.pt", "adamw")]
if len(sys.argv) > 3:  # one case, to look at: torchscript.py COHORT WORK cnn.pt adamw
    cases = [(sys.argv[3], sys.argv[4])]
for model_file, optimizer in cases:
    for world in (1, 2):
        want = reference(model_file, optimizer, world)
        got = cohort_run(model_file, optimizer, world, f"{model_file[:-3]}-{optimizer}-{world}")
        names = {k for k, _ in torch.jit.load(model_file).named_parameters()}
        names |= {k for k, _ in torch.jit.load(model_file).named_buffers()}
        if set(got) != names or not set(want) <= names:
            fail(f"{model_file}: exported names {sorted(got)}, the module's {sorted(names)}")
        start = {k: v for k, v in torch.jit.load(model_file).named_parameters()}
        moved = max(float((want[k] - start[k]).abs().max()) for k in start)
        diff = max(float((got[k].double() - want[k].double()).abs().max()) for k in want)
        print(f"{model_file:10s} {optimizer:5s} {world} rank(s): max |cohort - torch| = {diff:.1e} "
              f"(parameters moved up to {moved:.2e})")
        if not diff <= 1e-5 or moved < 1e-3:
            per = {k: float((got[k].double() - want[k].double()).abs().max()) for k in want}
            fail(f"{model_file} {optimizer} {world} ranks: differs by {diff} (moved {moved}): {per}")
        if world == 1:
            # Exported back as TorchScript: Python's torch.jit.load runs it, and in eval mode its
            # outputs equal those of PyTorch's own trained module.
            run = f"{model_file[:-3]}-{optimizer}-{world}"
            subprocess.run([cohort, "ckpt", "export", f"{run}/checkpoints", "-o",
                            f"{run}-scripted.pt", "--torchscript", model_file], check=True,
                           capture_output=True)
            exported = torch.jit.load(f"{run}-scripted.pt")
            exported.eval()
            reference.module.eval()
            probe = inputs_of(model_file)[1](list(range(64)))
            out_diff = float((exported(probe) - reference.module(probe)).abs().max())
            print(f"{'':10s} {'':5s} exported as TorchScript: outputs within {out_diff:.1e}")
            if not out_diff <= 1e-6:
                fail(f"{run}: the exported module's outputs differ by {out_diff}")

# The run keeps its module beside its checkpoints; a resume with another module is refused (its
# checkpoints hold that module's tensors), one with the kept copy or the same file resumes, and
# `--torchscript` without a file exports into the kept copy.
kept = "traced-sgd-1/checkpoints/module.pt"
if not os.path.exists(kept) or open(kept, "rb").read() != open("traced.pt", "rb").read():
    fail(f"{kept}: not a copy of traced.pt")


def resume(model_file, steps):
    return subprocess.run([cohort, "train", "--set", "model.name=torchscript",
                           "--set", f"model.file={model_file}", "--set", "data.path=set.h5",
                           "--set", f"train.max_steps={steps}", "--set", "train.epochs=10",
                           "--set", "train.run_dir=traced-sgd-1", "--set", "optim.name=sgd",
                           "--set", "optim.lr=0.05", "--set", f"data.batch_size={BATCH}",
                           "--set", f"train.seed={SEED}", "--set", "checkpoint.every_steps=5"],
                          capture_output=True, text=True)


done = resume("branch.pt", 25)  # the same names and shapes, another module
last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
if done.returncode != 2 or "branch.pt: model.file: not the module this run's checkpoints were " \
        "trained with" not in last or "first difference '" not in last:
    fail(f"a resume with another module: exit {done.returncode}, {done.stderr[-1500:]}")
print(f"refused (exit 2): {last[:160]}...")
for model_file, steps in ((kept, 25), ("traced.pt", 30)):
    done = resume(model_file, steps)
    if done.returncode != 0 or "resumed from" not in done.stdout + done.stderr:
        fail(f"a resume with {model_file}: exit {done.returncode}, {done.stderr[-1500:]}")
# The same module saved again (by another name: its archive's folder, so its bytes, differ):
# what the run depends on is equal, and it resumes.
torch.jit.load("traced.pt").save("again.pt")
if open("again.pt", "rb").read() == open("traced.pt", "rb").read():
    fail("again.pt has traced.pt's bytes: the case tests nothing")
done = resume("again.pt", 35)
if done.returncode != 0 or "resumed from" not in done.stdout + done.stderr:
    fail(f"a resume with the same module saved again: exit {done.returncode}, {done.stderr[-1500:]}")
print("resumed with the kept copy, with the same file, and with the module saved again")
for args, out in ((["--run-module"], "run-module.pt"), (["--torchscript", "traced.pt"], "named.pt")):
    subprocess.run([cohort, "ckpt", "export", "traced-sgd-1/checkpoints", "-o", out, *args],
                   check=True, capture_output=True)
probe = torch.from_numpy(x[:64])
same = torch.equal(torch.jit.load("run-module.pt")(probe), torch.jit.load("named.pt")(probe))
if not same:
    fail("--run-module differs from --torchscript traced.pt")
os.remove(kept)
done = subprocess.run([cohort, "ckpt", "export", "traced-sgd-1/checkpoints", "-o", "none.pt",
                       "--run-module"], capture_output=True, text=True)
if done.returncode != 2 or "module.pt: --run-module: no such file" not in done.stderr:
    fail(f"export from a run that kept no module: exit {done.returncode}, {done.stderr[-800:]}")
print("--run-module: the kept module (outputs equal --torchscript traced.pt's); none kept: refused")

# A top-level nn.Sequential splits into pipeline stages (one per child here): 2 stages x 1 data
# rank train as one process; any other module is refused when stages are asked for.
got = cohort_run("seq.pt", "sgd", 1, "seq-pipelined", stages=2)
want = reference("seq.pt", "sgd", 1)
diff = max(float((got[k] - want[k]).abs().max()) for k in want)
print(f"seq.pt     sgd   2 pipeline stages: max |cohort - torch| = {diff:.1e}")
if not diff <= 1e-5:
    fail(f"pipelined seq.pt differs by {diff}")
done = subprocess.run(launcher + ["-np", "2", cohort, "train", "--set", "model.name=torchscript",
                                  "--set", "model.file=cnn.pt", "--set", "data.path=set.h5",
                                  "--set", "parallel.pipeline_stages=2",
                                  "--set", "train.run_dir=cnn-pipelined"],
                      capture_output=True, text=True)
if done.returncode == 0 or "cannot be split into pipeline stages" not in done.stderr:
    fail(f"a non-Sequential module split into stages: {done.stderr[-1500:]}")

done = subprocess.run([cohort, "ckpt", "export", "seq-sgd-1/checkpoints", "-o", "wrong.pt",
                       "--torchscript", "cnn.pt"], capture_output=True, text=True)
if done.returncode != 2 or "not the module this run trained" not in done.stderr or \
        os.path.exists("wrong.pt"):
    fail(f"export into another module: exit {done.returncode}, {done.stderr[-800:]}")
print(f"refused (exit 2): {done.stderr.strip().splitlines()[-1]}")


class TwoArgs(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class DropsARow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))[1:]  # one sample short (none for a batch of one)


class Integers(DropsARow):
    def forward(self, x):
        return self.fc(x.flatten(1)).long()


torch.save(seq.state_dict(), "state_dict.pt")  # what users have: not TorchScript
torch.jit.script(TwoArgs()).save("two_args.pt")
torch.jit.script(DropsARow()).save("drops_a_row.pt")
torch.jit.script(Integers()).save("integers.pt")
with open("garbage.pt", "wb") as f:
    f.write(os.urandom(4096))
for bad, needle, data in (
        ("state_dict.pt", "state_dict.pt: model.file: not a TorchScript module", "set.h5"),
        ("garbage.pt", "garbage.pt: model.file: not a TorchScript module", "set.h5"),
        ("two_args.pt", "two_args.pt: model.file: forward() takes 2 arguments", "set.h5"),
        ("missing.pt", "model.file = missing.pt: ", "set.h5"),
        ("seq.pt", "seq.pt: model.file: the dataset has named fields; forward() must take Dict",
         "fields.h5"),
        ("fields.pt", "fields.pt: model.file: the dataset has one input; forward() must take a "
         "Tensor", "set.h5"),
        ("drops_a_row.pt", "the model returned [63, 10] Float for a batch of 64 samples", "set.h5"),
        ("integers.pt", "the model returned [64, 10] Long without a gradient", "set.h5")):
    done = subprocess.run([cohort, "train", "--set", "model.name=torchscript",
                           "--set", f"model.file={bad}", "--set", f"data.path={data}",
                           "--set", f"train.run_dir=bad-{bad}-{data}"],
                          capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or not lines or needle not in lines[-1] or len(lines[-1]) > 400:
        fail(f"{bad} on {data}: exit {done.returncode}, {done.stderr[-1500:]}")
    print(f"refused (exit 2): {lines[-1]}")
# Predict checks every batch the model returns before writing it: nothing is written.
for bad, needle in (("drops_a_row.pt", "drops_a_row.pt: the model returned [0, 10] Float for a "
                     "batch of 1 samples"),
                    ("integers.pt", "integers.pt: the model returned [1, 10] Long for a batch")):
    done = subprocess.run([cohort, "predict", "--model", bad, "--task", "classification",
                           "--data", "set.h5", "--out", f"pred-{bad}.h5"],
                          capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or not lines or needle not in lines[-1] or \
            [n for n in os.listdir(".") if n.startswith(f"pred-{bad}")]:
        fail(f"predict with {bad}: exit {done.returncode}, {done.stderr[-1500:]}")
    print(f"refused (exit 2): {lines[-1]}")
print("PASS")
