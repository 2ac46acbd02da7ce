#!/usr/bin/python3
"""A user transform written in Python, saved as TorchScript for `data.transform`: normalisation
to mean 0.5 / std 0.25, then, in training only (`self.training`; evaluation runs the module in
eval mode), random erasing: a zeroed square of a quarter of the image side in half of the
samples, its random choices taken from the per-sample seeds Cohort passes, so that a sample is
erased alike on any rank, in any worker and after a resume.
usage: make_transform.py OUT.pt"""
import sys
from typing import Dict

import torch


class NormaliseAndErase(torch.nn.Module):
    def forward(self, inputs: Dict[str, torch.Tensor], seeds: torch.Tensor) -> Dict[str, torch.Tensor]:
        x = (inputs["inputs"] - 0.5) / 0.25
        side = max(1, x.size(-1) // 4)
        if not self.training:
            return {"inputs": x}
        for i in range(x.size(0)):
            s = int(seeds[i])
            if s % 2 == 0:
                top = (s // 2) % (x.size(-2) - side + 1)
                left = (s // 1024) % (x.size(-1) - side + 1)
                x[i, ..., top:top + side, left:left + side] = 0.0
        return {"inputs": x}


torch.jit.script(NormaliseAndErase()).save(sys.argv[1])
