"""A mask made by writing into `out.detach()`, which shares its storage with a tensor autograd saved.

Rewritten from pytorch/pytorch#6990 ("Differences between .data and .detach"): zou3519's answer
shows `c = out.detach(); c.zero_()` changing `out`, which sigmoid's backward needs, so backward
raises; in-place changes through .detach() are reported by autograd (through .data they are not,
and the gradient is silently wrong). To change a copy, clone it.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#6990"
CATEGORY = "inplace"
CULPRIT = "out"
CAUSE = "writing through out.detach() changes the saved sigmoid output"
FIX_KIND = "no-data-write"
ERROR = "inplace"

torch.manual_seed(0)
model = nn.Linear(6, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(4, 6), torch.rand(4, 3)
    out = torch.sigmoid(model(x))
    mask = out.detach()  # BUG
    # FIX: mask = out.detach().clone()
    mask[mask < 0.5] = 0.0
    loss = ((out - y) ** 2 * (mask > 0)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
