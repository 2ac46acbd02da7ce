"""What the Python tests of tests/train/ that check Cohort against PyTorch share: the work
directory and launcher, failing, the reference loop's data order and step loop, a small CNN with
BatchNorm, and reading back a `cohort ckpt export`. Imported from the scripts beside it."""
import os
import shlex
import shutil
import sys

import torch
from torch.utils.data.distributed import DistributedSampler

# The graph executor's optimizing passes off, as Cohort runs TorchScript by default
# (model.jit_optimize = false): with them, Debian 13's torch 2.6 hangs in the third backward of
# a loaded module (docs/models.md), and off, both sides run the graph's operators as written.
torch._C._set_graph_executor_optimize(False)


def start():
    """COHORT WORKDIR from the command line: a fresh WORKDIR, entered; returns (cohort, the
    launcher's words from MPIEXEC and MPIEXEC_FLAGS)."""
    cohort, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chdir(work)
    launcher = shlex.split(os.environ.get("MPIEXEC", "mpiexec")) + shlex.split(
        os.environ.get("MPIEXEC_FLAGS", ""))
    return cohort, launcher


def fail(what):
    print("FAIL:", what)
    sys.exit(1)


def batches(n, batch, world, rank, epoch, seed):
    """Rank `rank`'s batches of epoch `epoch`, in the order of torch's DistributedSampler."""
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    order = list(sampler)
    per = batch // world
    return [order[i:i + per] for i in range(0, len(order), per)]


def train_loop(opt, steps, n, batch, world, seed, loss_of):
    """`steps` optimizer steps over epochs of DistributedSampler batches; loss_of(indices) is one
    rank's loss. Each step averages the ranks' losses, as DDP's averaged gradients do."""
    step, epoch = 0, 0
    while step < steps:
        per_rank = [batches(n, batch, world, r, epoch, seed) for r in range(world)]
        for b in range(len(per_rank[0])):
            if step == steps:
                break
            opt.zero_grad()
            loss = sum(loss_of(per_rank[r][b]) for r in range(world)) / world
            loss.backward()
            opt.step()
            step += 1
        epoch += 1


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # No bias before BatchNorm (which removes it): its gradient is rounding noise, which
        # AdamW's normalised step turns into arbitrary moves.
        self.conv = torch.nn.Conv2d(1, 6, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(6)
        self.head = torch.nn.Linear(6 * 4 * 4, 10)

    def forward(self, x):
        h = torch.nn.functional.avg_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.head(h.flatten(1))


def load_export(path):
    """A `cohort ckpt export` .pt file as a dict of tensors. torch >= 2.6 loads weights only by
    default and wants LibTorch's type tag of the typed dict allowed by name
    (docs/formats/checkpoint.md); torch 1.13 has no allow-list and needs none."""
    if hasattr(torch.serialization, "safe_globals"):
        from torch.jit._pickle import restore_type_tag
        with torch.serialization.safe_globals([restore_type_tag]):
            return torch.load(path)
    return torch.load(path)
