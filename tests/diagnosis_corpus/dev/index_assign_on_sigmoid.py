"""Setting one column of a sigmoid's output by index assignment before the loss.

Rewritten from pytorch/pytorch#9391 ("backward pass different behaviors with inplace
operation"): `b = a.sigmoid(); b[1] = 2` then backward raises, while the same values computed by
hand do not; it was closed as expected: sigmoid's backward needs its output, so it must not be
changed in place. Build the changed tensor out of place.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#9391"
CATEGORY = "inplace"
CULPRIT = "probs"
CAUSE = "index assignment overwrites the sigmoid output sigmoid's backward needs"
FIX_KIND = "out-of-place"
ERROR = "inplace"

torch.manual_seed(0)
model = nn.Linear(5, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(3, 5), torch.rand(3, 4)
    probs = torch.sigmoid(model(x))
    probs[:, 0] = 1.0  # BUG
    # FIX: probs = probs.index_fill(1, torch.tensor([0]), 1.0)
    loss = nn.functional.binary_cross_entropy(probs, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
