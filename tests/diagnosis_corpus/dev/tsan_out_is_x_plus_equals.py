"""A block that names its input `out` and adds to it in place, where the input is a saved tensor.

Rewritten from Jee-King/TSAN#3 ("RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"): the fix posted in the thread is in
TSAN/Train/model/tsan.py, line 103: `out = x` -> `out = x.clone()`, so that the in-place add
writes into a copy instead of into `x`, which the layer before saved for its backward.
"""
import torch
import torch.nn as nn

SOURCE = "Jee-King/TSAN#3"
CATEGORY = "inplace"
CULPRIT = "y"
CAUSE = "out += ... in forward writes into x, which the sigmoid saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"


class Block(nn.Module):
    def __init__(self, c=6):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.gate = nn.Conv2d(c, c, 1)

    def forward(self, feat):
        x = torch.sigmoid(self.conv(feat))
        out = x  # BUG
        # FIX: out = x.clone()
        out += self.gate(feat)
        return out


torch.manual_seed(0)
block = Block()
opt = torch.optim.SGD(block.parameters(), lr=0.1)
for step in range(2):
    y = block(torch.randn(2, 6, 8, 8))
    loss = y.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
