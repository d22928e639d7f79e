"""A feature pyramid network (FPN) neck for a detector: 1x1 lateral convolutions (conv + ReLU, as
with `act_cfg=dict(type='ReLU')`) on three backbone stages, a top-down pathway that adds each
upsampled coarser level to the finer one, and 3x3 output convolutions feeding a dense head.

Rewritten from open-mmlab/mmdetection#7175 ("Remove the inplace addition in `FPN`"): "The original
FPN uses an inplace addition in its implementation, which might cause the following
`RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation`". The merged change replaced `laterals[i - 1] += F.interpolate(laterals[i],
...)` by `laterals[i - 1] = laterals[i - 1] + F.interpolate(...)`: the lateral's ReLU kept its
output for backward, and the in-place sum overwrote it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "open-mmlab/mmdetection#7175"
CATEGORY = "inplace"
CULPRIT = "laterals[1]"   # the error names (2, 8, 8, 8), laterals[1], written at i = 2 (lead, checked)
CAUSE = "the top-down sum is added in place into a lateral ReLU output saved for backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The dense-head classification loss on every pyramid level trains the backbone stages, "
          "the lateral and output convolutions of the FPN, and the head.")
GRADS = ["backbone.parameters()", "lateral_convs.parameters()", "fpn_convs.parameters()", "head.parameters()"]

torch.manual_seed(0)
backbone = nn.ModuleList([nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(8, 16, 3, 2, 1), nn.Conv2d(16, 32, 3, 2, 1)])
lateral_convs = nn.ModuleList([nn.Sequential(nn.Conv2d(c, 8, 1), nn.ReLU()) for c in (8, 16, 32)])
fpn_convs = nn.ModuleList([nn.Conv2d(8, 8, 3, padding=1) for _ in range(3)])
head = nn.Conv2d(8, 5, 3, padding=1)
modules = [backbone, lateral_convs, fpn_convs, head]
optimizer = torch.optim.SGD([p for m in modules for p in m.parameters()], lr=0.01, momentum=0.9)
for step in range(2):
    x = torch.randn(2, 3, 32, 32)
    feats = []
    for stage in backbone:
        x = F.relu(stage(x))
        feats.append(x)
    laterals = [conv(f) for conv, f in zip(lateral_convs, feats)]
    for i in range(len(laterals) - 1, 0, -1):
        laterals[i - 1] += F.interpolate(laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")  # BUG
        # FIX: laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")
    outs = [conv(lat) for conv, lat in zip(fpn_convs, laterals)]
    loss = sum(F.cross_entropy(head(o), torch.randint(0, 5, (2, *o.shape[2:]))) for o in outs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
