"""A residual unit (conv, batch norm, ReLU, conv, batch norm, add the skip, ReLU) under a small
classification head, written out cell by cell.

Rewritten from the PyTorch forum thread "In-place operation and ResNet": the poster's ResidualUnitA
computes `residual = self.bn_1(self.conv_1(x))` and then `x += residual`, and backward raises "one of
the variables needed for gradient computation has been modified by an inplace operation"; their
ResidualUnitB, which adds into the branch's own output, does not. The answer: "During
back-propagation, the original value of x is need, but it has been changed in an in-place
operations", and the poster: "The back-propagation of self.conv_1 needs the original value of x".
The fix adds out of place, leaving the input conv_1 saved as it was.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "In-place operation and ResNet"
CATEGORY = "inplace"
CULPRIT = "x"
CAUSE = "x += residual overwrites the activation conv_1 saved for its weight gradient"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The classification loss trains both convolutions, both batch norms and the head, through the "
          "skip path and the residual branch alike.")
GRADS = "net.parameters()"

torch.manual_seed(0)
conv_0, bn_0 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
conv_1, bn_1 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
head = nn.Linear(8, 4)
net = nn.ModuleList([conv_0, bn_0, conv_1, bn_1, head])
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(2):
    images, labels = torch.randn(6, 3, 8, 8), torch.randint(0, 4, (6,))
    x = F.relu(bn_0(conv_0(images)), inplace=True)
    residual = bn_1(conv_1(x))
    x += residual  # BUG
    # FIX: x = x + residual
    out = F.relu(x, inplace=True)
    loss = F.cross_entropy(head(out.mean(dim=(2, 3))), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
