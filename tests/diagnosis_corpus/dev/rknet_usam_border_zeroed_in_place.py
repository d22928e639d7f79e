"""RK-Net, cross-view geo-localization (drone and satellite views of the same building): a unit
subtraction attention module (USAM) predicts a keypoint attention map from the backbone features,
and with `polish` on it zeroes the map's one-pixel border before reweighting the features.

Rewritten from AggMan96/RK-Net#9: training fails with "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.FloatTensor [8, 1, 96, 96]],
which is output 0 of ReluBackward0". The answer in the thread: "This modifies the att tensor
in-place, which is causing the gradient computation to fail. `att[:, :, :, 0] = 0` [...] add
`att = att.clone()` under `if self.polish:`". The ReLU's backward needs its output, and the border
writes are index assignments into that very output, inside the module, not in the training loop.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "AggMan96/RK-Net#9"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the attention module zeroes the border of the ReLU output by index assignment"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The cross-view classification loss trains the backbone, the attention module (USAM) and the "
          "classifier, through the attention map inside its border.")
GRADS = "model.parameters()"


class USAM(nn.Module):
    def __init__(self, channels, polish=True):
        super().__init__()
        self.conv, self.polish = nn.Conv2d(channels, 1, 3, padding=1, bias=False), polish

    def forward(self, x):
        att = F.relu(self.conv(x) - self.conv(F.avg_pool2d(x, 3, 1, 1)))
        if self.polish:
            att[:, :, :, 0] = 0  # BUG
            # FIX: att = att.clone(); att[:, :, :, 0] = 0
            att[:, :, :, -1] = 0
            att[:, :, 0, :] = 0
            att[:, :, -1, :] = 0
        return x * att + x


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), USAM(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for batch in range(2):
    drone, satellite, labels = torch.randn(4, 3, 8, 8), torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
    loss = F.cross_entropy(model(drone), labels) + F.cross_entropy(model(satellite), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
