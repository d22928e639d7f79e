"""A feature pyramid's top-down path, as FPN necks write it: each coarser level, upsampled, is added
in place into the finer one with `laterals[i - 1] += ...`; the finer level is a sigmoid's output,
which the sigmoid saved for its backward (an item of a list, with an index that has spaces in it)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "The mean of every pyramid level trains the three lateral convolutions."
GRADS = "lateral.parameters()"
RULE = "inplace-write"
KIND = "out-of-place"

torch.manual_seed(0)
lateral = nn.ModuleList(nn.Conv2d(c, 4, 1) for c in (2, 3, 5))
feats = [torch.randn(1, c, s, s) for c, s in ((2, 16), (3, 8), (5, 4))]
laterals = [torch.sigmoid(conv(x)) for conv, x in zip(lateral, feats)]
for i in range(len(laterals) - 1, 0, -1):
    laterals[i - 1] += F.interpolate(laterals[i], scale_factor=2.0)  # BUG
    # FIX: laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], scale_factor=2.0)
loss = sum(level.mean() for level in laterals)
loss.backward()
