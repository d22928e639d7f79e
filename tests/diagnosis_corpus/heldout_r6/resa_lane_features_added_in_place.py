"""RESA (recurrent feature-shift aggregator) for lane detection: after the backbone, the feature
map is refined by several passes that shift it by a stride along the rows and add a convolved,
rectified copy of the shifted rows back onto it, so that information travels across the image.

Rewritten from voldemortX/pytorch-auto-drive#121: training RESA raised "one of the variables needed
for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor [1, 128,
45, 80]], which is output 0 of ReluBackward0, is at version 20; expected version 0". The tensor named
is the backbone's ReLU output (ReLU saves its result), not anything of the aggregator's; the writer is
the aggregator's `x.add_(...)`, one write per pass. The maintainer: "the torch inplace grad
restrictions are tightened after 1.8.0. We might need a BC-Break change here, change all the `add_`
to `add`", and to the reporter: "Maybe try replace all `.add_(` to `.add(`".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "voldemortX/pytorch-auto-drive#121"
CATEGORY = "inplace"
CULPRIT = "features"
CAUSE = "the aggregator adds in place into the backbone's saved ReLU output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The lane segmentation loss trains the backbone, every shift convolution of the aggregator and the "
          "decoder, through every refinement pass.")
GRADS = ["backbone.parameters()", "convs.parameters()", "decoder.parameters()"]


def resa(x, convs, alpha=2.0):
    """Shift the rows down and up by H/2, H/4, ... and add the convolved rows back."""
    H = x.shape[-2]
    for i, conv in enumerate(convs):
        idx = (torch.arange(H) + (1 if i % 2 == 0 else -1) * (H // 2 ** (i // 2 + 1))) % H
        x.add_(alpha * F.relu(conv(x[..., idx, :])))  # BUG
        # FIX: x = x.add(alpha * F.relu(conv(x[..., idx, :])))
    return x


torch.manual_seed(0)
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
convs = nn.ModuleList(nn.Conv2d(8, 8, (1, 5), padding=(0, 2), bias=False) for _ in range(4))
decoder = nn.Conv2d(8, 5, 1)                                  # background + 4 lanes
optimizer = torch.optim.SGD([*backbone.parameters(), *convs.parameters(), *decoder.parameters()], lr=0.01)
images, lanes = torch.randn(2, 3, 8, 16), torch.randint(0, 5, (2, 8, 16))
features = backbone(images)
loss = F.cross_entropy(decoder(resa(features, convs)), lanes)
optimizer.zero_grad()
loss.backward()
optimizer.step()
