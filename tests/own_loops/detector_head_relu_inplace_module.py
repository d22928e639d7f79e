"""A detection head with a classification and a box branch on one feature map: the ReLU before the
box branch is a module made with `inplace=True` in `__init__`, so it overwrites the feature map that
the classification convolution saved for its backward (the write happens inside torch, called
from `f = self.act(f)`; the line to change is where the module is made)."""
import torch
import torch.nn as nn

INTENT = "The summed classification and box loss trains both branches and the stem before them."
GRADS = ["stem.parameters()", "head.parameters()"]
RULE = "inplace-write"
KIND = "out-of-place"


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Conv2d(4, 2, 1)
        self.reg = nn.Conv2d(4, 4, 1)
        self.act = nn.ReLU(inplace=True)  # BUG
        # FIX: self.act = nn.ReLU(inplace=False)

    def forward(self, f):
        logits = self.cls(f)
        f = self.act(f)
        return logits, self.reg(f)


torch.manual_seed(0)
stem, head = nn.Conv2d(3, 4, 3, padding=1), Head()
logits, boxes = head(stem(torch.randn(2, 3, 8, 8)))
loss = logits.pow(2).mean() + boxes.abs().mean()
loss.backward()
