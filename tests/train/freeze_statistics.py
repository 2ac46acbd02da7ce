"""model.freeze keeps the running statistics of frozen modules (issue 44), against PyTorch
(Debian's /usr/bin/python3).

A scripted module whose encoder holds a BatchNorm1d starts from pretrained weights with
distinctive running statistics (mean 0.3, variance 2.0, 7 batches tracked) and is fine-tuned
with the encoder frozen. Frozen means frozen: the statistics end exactly as the file had them,
and the head trains as a PyTorch loop does with the encoder in eval mode (the BatchNorm
normalising by its running statistics), within 1e-5, on 1 and 2 ranks, with an evaluation
between (which switches modes back and forth). The start line counts trainable and frozen
parameters. Controls: with model.freeze_statistics = false the statistics move and the head
trains as PyTorch's with the encoder in train mode (batch statistics); the built-in cnn
(LibTorch's own BatchNorm2d) holds its frozen BatchNorms the same way, also split into 2
pipeline stages (each stage's switches hold its own), and moves them when allowed.

Usage: freeze_statistics.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import subprocess

import h5py
import numpy as np
import torch

from torch_ref import fail, load_export, start, train_loop

cohort, launcher = start()
STEPS, BATCH, SEED, N = 20, 32, 4, 384
rng = np.random.default_rng(7)
x = (rng.standard_normal((N, 12)) * 1.5 + 0.8).astype(np.float32)
y = (x[:, :10].argmax(1)).astype(np.int64)
with h5py.File("set.h5", "w") as f:
    f["inputs"], f["targets"] = x, y
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10
with h5py.File("val.h5", "w") as f:
    f["inputs"], f["targets"] = x[:64], y[:64]
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.BatchNorm1d(24),
                                           torch.nn.Tanh(), torch.nn.Linear(24, 16),
                                           torch.nn.Tanh())
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.encoder(x))


torch.manual_seed(SEED)
torch.jit.script(Net()).save("net.pt")
pretrained = Net()
with torch.no_grad():
    bn = pretrained.encoder[1]
    bn.running_mean.fill_(0.3)
    bn.running_var.fill_(2.0)
    bn.num_batches_tracked.fill_(7)
torch.save(pretrained.state_dict(), "sd.pt")
kept = {k: v.clone() for k, v in pretrained.state_dict().items() if "running" in k or "tracked" in k}


def train(run, world, extra=()):
    launch = [] if world == 1 else launcher + ["-np", str(world)]
    sets = [("model.name", "torchscript"), ("model.file", "net.pt"), ("data.path", "set.h5"),
            ("data.val_path", "val.h5"), ("data.batch_size", BATCH // world),
            ("optim.lr", 0.05), ("optim.momentum", 0.9), ("train.seed", SEED),
            ("train.max_steps", STEPS), ("train.epochs", 10), ("train.log_every", 1000),
            ("train.eval_every", 7), ("train.run_dir", run), ("model.init_from", "sd.pt"),
            ("model.freeze", "^encoder\\.")] + list(extra)
    cmd = launch + [cohort, "train"]
    for key, value in sets:
        cmd += ["--set", f"{key}={value}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{run}: exit {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    subprocess.run([cohort, "ckpt", "export", f"{run}/checkpoints", "-o", f"{run}.pt"],
                   check=True, capture_output=True)
    return done, load_export(f"{run}.pt")


def reference(world, encoder_training):
    module = Net()
    module.load_state_dict(pretrained.state_dict())
    module.train()
    module.encoder.train(encoder_training)
    for p in module.encoder.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(module.head.parameters(), lr=0.05, momentum=0.9)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    train_loop(opt, STEPS, N, BATCH, world, SEED,
               lambda idx: torch.nn.functional.cross_entropy(module(xs[idx]), ys[idx]))
    return {k: v.detach() for k, v in module.state_dict().items()}


def head_diff(got, want):
    return max(float((got[k].double() - want[k].double()).abs().max()) for k in
               ("head.weight", "head.bias"))


for world in (1, 2):
    done, got = train(f"held-{world}", world)
    for name, value in kept.items():
        if not torch.equal(got[name].to(value.dtype), value):
            fail(f"{world} rank(s): frozen {name} moved: {got[name].flatten()[:4]} "
                 f"(the file's {value.flatten()[:4]})")
    diff = head_diff(got, reference(world, encoder_training=False))
    print(f"held, {world} rank(s): statistics as the file had them; head max |cohort - torch| "
          f"(encoder in eval mode) = {diff:.1e}")
    if not diff <= 1e-5:
        fail(f"held, {world} rank(s): the head differs by {diff}")
line = next((l for l in done.stdout.splitlines() if l.startswith("model torchscript")), "")
trainable = 16 * 10 + 10
frozen = 12 * 24 + 24 + 24 * 2 + 24 * 16 + 16
want = (f"{trainable + frozen} parameters: {trainable} trainable, {frozen} frozen "
        "(model.freeze; running statistics of 1 frozen module(s) kept)")
if want not in line:
    fail(f"start line '{line}', want '{want}'")
print(f"start line: {line}")

# Control: allowed to move, they move, and the head is PyTorch's with batch statistics.
done, got = train("moving", 1, [("model.freeze_statistics", "false")])
moved = float((got["encoder.1.running_mean"].double() - 0.3).abs().max())
if not moved > 1e-3:
    fail(f"model.freeze_statistics = false: running_mean moved only {moved}")
diff = head_diff(got, reference(1, encoder_training=True))
print(f"freeze_statistics = false: running_mean moved {moved:.2f}; head max |cohort - torch| "
      f"(encoder in train mode) = {diff:.1e}")
if not diff <= 1e-5:
    fail(f"freeze_statistics = false: the head differs by {diff}")
if "running statistics of 0 frozen module(s) kept" not in done.stdout:
    fail(f"start line with freeze_statistics = false: {done.stdout[:600]}")

# The built-in cnn (LibTorch's BatchNorm2d, through Model's own switch).
subprocess.run([cohort, "data", "make-synthetic", "--kind", "images", "--samples", "128",
                "--image-size", "8", "--channels", "1", "--classes", "4", "--out", "img.h5"],
               check=True, capture_output=True)
for allowed, stages in (("true", 1), ("false", 1), ("false", 2)):
    launch = [] if stages == 1 else launcher + ["-np", "2"]
    cmd = launch + [cohort, "train", "--set", "model.name=cnn", "--set", "model.width=4",
           "--set", "model.blocks=1", "--set", "data.path=img.h5", "--set", "data.batch_size=16",
           "--set", "train.max_steps=6", "--set", "train.log_every=1000",
           "--set", f"train.run_dir=cnn-{allowed}-{stages}", "--set", "model.freeze=bn|shortcut\\.1\\.",
           "--set", f"model.freeze_statistics={'false' if allowed == 'true' else 'true'}",
           "--set", f"parallel.pipeline_stages={stages}"]
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run([cohort, "ckpt", "export", f"cnn-{allowed}-{stages}/checkpoints", "-o",
                    f"cnn-{allowed}-{stages}.pt"], check=True, capture_output=True)
    got = load_export(f"cnn-{allowed}-{stages}.pt")
    means = [k for k in got if k.endswith("running_mean")]
    if not means:
        fail(f"cnn: no running_mean in the export: {list(got)[:10]}")
    moved = max(float(got[k].abs().max()) for k in means)  # they start at 0
    if (allowed == "true") != (moved > 0):
        fail(f"cnn, statistics {'allowed to move' if allowed == 'true' else 'held'}: "
             f"largest running_mean {moved}")
    print(f"cnn, {stages} stage(s), statistics {'moving' if allowed == 'true' else 'held'}: "
          f"largest |running_mean| {moved:.3g} over {len(means)} BatchNorm(s)")
print("PASS")
