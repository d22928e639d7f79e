"""A residual block that adds the shortcut with `out += residual` onto a ReLU output.

Rewritten from iMED-Lab/ER-Net#3 ("replace out+=residual with out=out+residual"): the in-place
add raises "... which is output 0 of ReluBackward0, is at version 1; expected version 0";
the fix is the out-of-place `out = out + residual`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "iMED-Lab/ER-Net#3"
CATEGORY = "inplace"
CULPRIT = "out"
CAUSE = "+= writes into the ReLU output that ReluBackward saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"

torch.manual_seed(0)
conv1 = nn.Conv2d(2, 2, 3, padding=1)
conv2 = nn.Conv2d(2, 2, 3, padding=1)
opt = torch.optim.SGD([*conv1.parameters(), *conv2.parameters()], lr=0.1)
for step in range(2):
    x = torch.randn(1, 2, 5, 5)
    residual = conv1(x)
    out = F.relu(conv2(x))
    out += residual  # BUG
    # FIX: out = out + residual
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
