"""A block whose activation module is nn.ReLU(inplace=True), applied to a tensor autograd saved.

Rewritten from osmr/imgclsmob#13 ("Inplace ReLU's are unnecessary and wrong"): `self.activ =
nn.ReLU(inplace=True)` then `x = self.activ(x)` modifies a tensor needed for the gradient;
the fix adopted is `inplace=False`.
"""
import torch
import torch.nn as nn

SOURCE = "osmr/imgclsmob#13"
CATEGORY = "inplace"
CULPRIT = "gate"
CAUSE = "in-place ReLU overwrites the sigmoid output its backward needs"
FIX_KIND = "out-of-place"
ERROR = "inplace"


class GatedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.activ = nn.ReLU(inplace=True)  # BUG
        # FIX: self.activ = nn.ReLU(inplace=False)


torch.manual_seed(0)
block = GatedBlock()
opt = torch.optim.SGD(block.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(4, 8)
    gate = torch.sigmoid(block.fc(x))
    loss = (block.activ(gate) * x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
