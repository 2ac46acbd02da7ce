"""model.init_from, init_strict, init_prefix_map, model.freeze and optim.lr_scale against PyTorch
(Debian's /usr/bin/python3).

A scripted module (an `encoder` MLP and a `head`) is trained by `cohort train` for 20 steps from
weights given by init_from, and by a plain PyTorch loop from the same weights (torch's
DistributedSampler order; 2 ranks: the ranks' losses averaged, as DDP does); parameters must agree
within 1e-5 (also for a run that was to resume and found every checkpoint bad). Sources: a state_dict saved by torch.save (1 and 2 ranks), the same nested under
"model" beside other entries, names with another prefix (backbone. -> encoder., by
init_prefix_map), a Cohort checkpoint directory, and `cohort ckpt export` .pt and .h5 files. With
optim.lr_scale = "encoder:0.1" the reference gives the encoder its own parameter group at a tenth
of the learning rate (2 ranks). Fine-tuning: a state_dict whose head has 5 classes into a model
with 10, init_strict = false, the encoder frozen: the report names the head with both shapes,
the encoder ends exactly as the file had it, the checkpoint holds no optimizer state for it, and
the head trains as PyTorch's does with only the head in its optimizer.

Refused in one line: a strict load with a head of another shape, or with other names (exit 2),
a file with no matching names even when not strict (exit 2), a torch.save of a whole module (a pickled class: no code is run,
exit 3), zips shaped as torch.save's whose storage claims more bytes than its record holds or
whose tensor reaches past its storage, a truncated zip and random bytes (exit 3), model.freeze and optim.lr_scale regexes that
match nothing (exit 2), and a malformed lr_scale (exit 2, at load).

Usage: init_from.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import collections
import io
import json
import os
import pickle
import subprocess
import zipfile

import h5py
import numpy as np
import torch

from torch_ref import fail, load_export, start, train_loop

cohort, launcher = start()
STEPS, BATCH, SEED, N = 20, 32, 4, 384
rng = np.random.default_rng(5)
x = rng.standard_normal((N, 12)).astype(np.float32)
y = (x[:, :10].argmax(1)).astype(np.int64)
with h5py.File("set.h5", "w") as f:
    f["inputs"], f["targets"] = x, y
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10


def trunk():
    return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 16),
                               torch.nn.Tanh())


class Net(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.encoder = trunk()
        self.head = torch.nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


class Backbone(torch.nn.Module):  # the same weights under another name
    def __init__(self):
        super().__init__()
        self.backbone = trunk()
        self.head = torch.nn.Linear(16, 10)


torch.manual_seed(SEED)
torch.jit.script(Net()).save("net.pt")  # the model Cohort trains: a fresh initialisation
pretrained = Net()                      # other values: what init_from gives
torch.save(pretrained.state_dict(), "sd.pt")
torch.save({"model": pretrained.state_dict(), "epoch": 3, "note": "nested"}, "nested.pt")
backbone = Backbone()
backbone.load_state_dict({k.replace("encoder.", "backbone."): v
                          for k, v in pretrained.state_dict().items()})
torch.save(backbone.state_dict(), "backbone.pt")
five = Net(classes=5)
five.encoder.load_state_dict(pretrained.encoder.state_dict())
torch.save(five.state_dict(), "five.pt")
torch.save({"decoder.weight": torch.zeros(3, 3)}, "other.pt")
torch.save(pretrained, "module.pt")  # a whole pickled module: classes, not a state_dict


class Storage:  # pickled as torch.save's persistent id of a float storage
    def __init__(self, numel):
        self.numel = numel


class Tensor:  # pickled as torch.save pickles a tensor over a Storage
    def __init__(self, storage, size):
        self.storage, self.size = storage, size

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, 0, self.size, (1,), False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", torch.FloatStorage, "0", "cpu", obj.numel) if isinstance(
            obj, Storage) else None


def crafted(path, numel, size):
    """A torch.save-shaped zip whose one tensor claims `numel` storage elements and `size`,
    over a record of 10 floats."""
    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump({"head.bias": Tensor(Storage(numel), (size,))})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buffer.getvalue())
        z.writestr("archive/data/0", np.zeros(10, np.float32).tobytes())
        z.writestr("archive/version", "3\n")


crafted("huge.pt", 10**12, 10)   # a storage larger than its record
crafted("past.pt", 10, 1000)     # a tensor past its storage
raw = open("sd.pt", "rb").read()
open("truncated.pt", "wb").write(raw[:len(raw) // 2])
open("garbage.pt", "wb").write(rng.integers(0, 256, 4096).astype(np.uint8).tobytes())
open("prefixed.pt", "wb").write(b"junk" + raw)  # a zip reader would find it from its end
os.mkfifo("weights.fifo")


def reference(start_state, world, lr_scale=None, frozen=False):
    module = torch.jit.load("net.pt")
    module.load_state_dict(start_state, strict=not frozen)
    if frozen:
        groups = [{"params": list(module.head.parameters())}]
    elif lr_scale:
        groups = [{"params": list(module.encoder.parameters()), "lr": 0.05 * lr_scale},
                  {"params": list(module.head.parameters())}]
    else:
        groups = [{"params": list(module.parameters())}]
    opt = torch.optim.SGD(groups, lr=0.05, momentum=0.9)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    train_loop(opt, STEPS, N, BATCH, world, SEED,
               lambda idx: torch.nn.functional.cross_entropy(module(xs[idx]), ys[idx]))
    return {k: v.detach() for k, v in module.named_parameters()}


def train(run, world=1, extra=(), steps=STEPS, check=True):
    launch = [] if world == 1 else launcher + ["-np", str(world)]
    sets = {"model.name": "torchscript", "model.file": "net.pt", "data.path": "set.h5",
            "data.batch_size": BATCH // world, "optim.lr": 0.05, "optim.momentum": 0.9,
            "train.seed": SEED, "train.max_steps": steps, "train.epochs": 10,
            "train.log_every": 1000, "checkpoint.every_steps": steps, "train.run_dir": run}
    cmd = launch + [cohort, "train"]
    for key, value in list(sets.items()) + list(extra):
        cmd += ["--set", f"{key}={value}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if check and done.returncode != 0:
        fail(f"{run}: exit {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done


def exported(run, suffix=".pt"):
    subprocess.run([cohort, "ckpt", "export", f"{run}/checkpoints", "-o", f"{run}{suffix}"],
                   check=True, capture_output=True)
    return load_export(f"{run}.pt") if suffix == ".pt" else None


def compare(run, want, what):
    got = exported(run)
    diff = max(float((got[k].double() - want[k].double()).abs().max()) for k in want)
    print(f"{what}: max |cohort - torch| = {diff:.1e}")
    if not diff <= 1e-5:
        fail(f"{what}: parameters differ by {diff}")
    return got


start_state = pretrained.state_dict()
for world in (1, 2):
    train(f"sd-{world}", world, [("model.init_from", "sd.pt")])
    compare(f"sd-{world}", reference(start_state, world),
            f"init_from sd.pt (torch.save), {world} rank(s)")
done = train("nested", 1, [("model.init_from", "nested.pt")])
compare("nested", reference(start_state, 1), "init_from nested.pt (under 'model')")
if "init_from nested.pt: loaded 6 tensor(s)" not in done.stdout:
    fail(f"no init_from report: {done.stdout[-800:]}")
train("prefix", 1, [("model.init_from", "backbone.pt"),
                    ("model.init_prefix_map", "backbone.:encoder.")])
compare("prefix", reference(start_state, 1), "init_from backbone.pt, prefix backbone. -> encoder.")
train("scaled", 2, [("model.init_from", "sd.pt"), ("optim.lr_scale", "encoder:0.1")])
compare("scaled", reference(start_state, 2, lr_scale=0.1), "optim.lr_scale encoder:0.1, 2 ranks")

# Cohort's own files as sources: a run's checkpoint directory and its exports.
base = exported("sd-1")
exported("sd-1", ".h5")
for source in ("sd-1/checkpoints", "sd-1.pt", "sd-1.h5"):
    run = "from-" + source.replace("/", "-")
    train(run, 1, [("model.init_from", source)])
    compare(run, reference(base, 1), f"init_from {source}")

# Fine-tuning: a 5-class head into a 10-class model, not strict, the encoder frozen.
done = train("finetune", 1, [("model.init_from", "five.pt"), ("model.init_strict", "false"),
                             ("model.freeze", "^encoder\\.")])
line = next((l for l in done.stdout.splitlines() if l.startswith("init_from")), "")
print(line)
if "loaded 4 tensor(s)" not in line or "head.weight [5, 16] in the file, [10, 16] in the model" \
        not in line:
    fail(f"the non-strict report: {line}")
fresh = dict(torch.jit.load("net.pt").named_parameters())
start = {k: (v if k.startswith("encoder.") else fresh[k]) for k, v in five.state_dict().items()}
got = compare("finetune", reference(start, 1, frozen=True), "fine-tune: head only, encoder frozen")
if any(not torch.equal(got[k], five.state_dict()[k]) for k in got if k.startswith("encoder.")):
    fail("a frozen parameter moved")
inspect = subprocess.run([cohort, "ckpt", "inspect", "finetune/checkpoints", "--json"],
                         capture_output=True, text=True, check=True)
names = [t["name"] for t in json.loads(inspect.stdout)["tensor_index"]]
if any(n.startswith("optim.encoder") for n in names) or not any(n.startswith("optim.head")
                                                                 for n in names):
    fail(f"optimizer state of frozen parameters: {names}")
print("frozen encoder: unchanged, no optimizer state in the checkpoint")

# A resumed run does not read init_from again (a requeued job's pretrained file may be gone).
os.rename("sd.pt", "sd-moved.pt")
done = train("sd-1", 1, [("model.init_from", "sd.pt"), ("checkpoint.resume", "true")], steps=25)
if "init_from sd.pt: not read, the run resumes from sd-1/checkpoints" not in done.stdout or \
        "resumed from" not in done.stdout + done.stderr:
    fail(f"a resume read init_from: {done.stdout[-800:]}")
print("resumed without init_from's file: not read")

# ... but when no checkpoint loads after all (every one corrupt in its last tensor), the run starts
# from the pretrained weights, as one without checkpoints does: the same parameters as sd-1's.
os.rename("sd-moved.pt", "sd.pt")
subprocess.run(["cp", "-r", "sd-1", "sd-bad"], check=True)
for step in os.listdir("sd-bad/checkpoints"):
    if step.startswith("step-"):
        with h5py.File(f"sd-bad/checkpoints/{step}/shard-00000-of-00001.h5", "a") as f:
            f["slices/trainer.position"][0] += 1
done = train("sd-bad", 1, [("model.init_from", "sd.pt"), ("checkpoint.resume", "true")])
if "skipping checkpoint" not in done.stdout + done.stderr or \
        "init_from sd.pt: loaded" not in done.stdout:
    fail(f"no checkpoint loaded, init_from not read after all: {done.stdout[-800:]}")
compare("sd-bad", reference(start_state, 1), "every checkpoint bad: init_from sd.pt after all")

BAD = [
    ([("model.init_from", "five.pt")], 2,
     "five.pt: not this model (model.init_strict): 0 missing (), 0 unexpected (), 2 of another "
     "shape (head.weight [5, 16] in the file, [10, 16] in the model"),
    ([("model.init_from", "backbone.pt")], 2, "backbone.pt: not this model (model.init_strict): 4 "
     "missing (encoder.0.weight, encoder.0.bias, encoder.2.weight (and 1 more)), 4 unexpected"),
    ([("model.init_from", "other.pt"), ("model.init_strict", "false")], 2,
     "other.pt: no tensor of it fits the model by name and shape"),
    ([("model.init_from", "module.pt")], 3, "module.pt: the pickle names __main__.Net, which a "
     "state_dict of tensors does not hold"),
    ([("model.init_from", "huge.pt")], 3,
     "huge.pt: storage 0 holds 40 bytes, its 1000000000000 elements need more"),
    ([("model.init_from", "past.pt")], 3, "past.pt: a tensor reaches past its storage of 10"),
    ([("model.init_from", "truncated.pt")], 3, "truncated.pt: not a torch.save zip file"),
    ([("model.init_from", "garbage.pt")], 3, "garbage.pt: neither a torch.save zip file nor a "
     "Cohort export"),
    ([("model.init_from", "prefixed.pt")], 3, "prefixed.pt: neither a torch.save zip file nor a "
     "Cohort export (.pt, .h5) nor a checkpoint directory: it does not begin with a zip record"),
    ([("model.init_from", "weights.fifo")], 3, "weights.fifo: a FIFO, not a regular file"),
    ([("model.freeze", "^decoder")], 2, "model.freeze = '^decoder' matches no parameter"),
    ([("optim.lr_scale", "decoder:0.5")], 2, "optim.lr_scale: 'decoder' matches no trained"),
    ([("optim.lr_scale", "encoder=0.5")], 2, "'encoder=0.5' is not REGEX:FACTOR"),
]
for extra, code, needle in BAD:
    done = train("bad", 1, extra, check=False)
    lines = done.stderr.strip().splitlines()
    if done.returncode != code or not lines or needle not in lines[-1]:
        fail(f"{extra}: exit {done.returncode}, {done.stderr[-1200:]}")
    print(f"refused (exit {code}): {lines[-1][:220]}")
print("PASS")
