#!/usr/bin/env python3
# What turning LibTorch's oneDNN path off costs a CNN (docs/performance.md, "Convolutions without
# oneDNN"): one forward and backward of a CNN of Cohort's example shape, oneDNN on and off,
# interleaved step by step in one process, medians printed as JSON.
#   /usr/bin/python3 bench/onednn_conv.py        (Debian's torch; on Debian 13 oneDNN's gradients
#                                                 are wrong, which this does not look at: speed only)
import torch, time, statistics, json
torch.set_num_threads(2)
def block(cin, cout, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
                               torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())
res = {}
for fmt_name, fmt in (("nhwc", torch.channels_last), ("nchw", torch.contiguous_format)):
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, 1, 1), block(16, 16, 1), block(16, 32, 2), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)).to(memory_format=fmt)
    x = torch.randn(64, 1, 28, 28).contiguous(memory_format=fmt)
    t = {True: [], False: []}
    for rep in range(12):
        for on in (True, False):
            torch.backends.mkldnn.enabled = on
            s = time.perf_counter(); m(x).sum().backward(); t[on].append(time.perf_counter() - s)
    on, off = statistics.median(t[True][2:]), statistics.median(t[False][2:])
    res[fmt_name] = {"onednn_ms": round(on * 1e3, 1), "libtorch_ms": round(off * 1e3, 1), "slowdown": round(off / on, 2)}
print(json.dumps(res))
