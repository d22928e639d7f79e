"""A detector's neck, PAFPN (a top-down then a bottom-up pass over the feature pyramid), configured with
`act_cfg=dict(type='ReLU')` so that its lateral, output and downsample ConvModules end in a ReLU.
Rewritten from open-mmlab/mmdetection#9450 ("[Fix] Fix backward inplace error with pafpn", merged):
"Backward pass error when using inplace operation with ReLU. For example, if
`act_cfg=dict(type='ReLU')`, training would raise errors. Modification: Don't do inplace operations."
The neck adds the upsampled coarser level into each lateral, and each downsampled finer output into the
next output, with `+=`: with a ReLU ending every ConvModule, those are ReLU outputs that the ReLU's
backward needs (the same change was made to FPN in #7175). The user only changed the config.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "open-mmlab/mmdetection#9450"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the neck's += writes into ReLU outputs that the ReLU's backward needs"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The detection loss trains the neck's lateral, output and downsample convolutions "
          "together with the head.")
GRADS = ["neck.parameters()", "head.parameters()"]


def conv_module(cin, cout, kernel_size, stride=1, act_cfg=None):   # mmcv ConvModule: conv, then the configured activation
    conv = nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=kernel_size // 2)
    return nn.Sequential(conv, nn.ReLU()) if act_cfg == dict(type="ReLU") else nn.Sequential(conv)


class PAFPN(nn.Module):
    def __init__(self, in_channels=(4, 8, 16), out_channels=8, act_cfg=None):
        super().__init__()
        self.lateral_convs = nn.ModuleList(conv_module(c, out_channels, 1, act_cfg=act_cfg) for c in in_channels)
        self.fpn_convs = nn.ModuleList(conv_module(out_channels, out_channels, 3, act_cfg=act_cfg) for _ in in_channels)
        self.downsample_convs = nn.ModuleList(conv_module(out_channels, out_channels, 3, stride=2, act_cfg=act_cfg)
                                              for _ in in_channels[1:])

    def forward(self, inputs):
        laterals = [conv(x) for conv, x in zip(self.lateral_convs, inputs)]
        for i in range(len(laterals) - 1, 0, -1):             # top-down path
            laterals[i - 1] += F.interpolate(laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")  # BUG
            # FIX: laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")
        inter_outs = [conv(lat) for conv, lat in zip(self.fpn_convs, laterals)]
        for i in range(len(inter_outs) - 1):                  # bottom-up path
            inter_outs[i + 1] += self.downsample_convs[i](inter_outs[i])  # BUG
            # FIX: inter_outs[i + 1] = inter_outs[i + 1] + self.downsample_convs[i](inter_outs[i])
        return inter_outs


torch.manual_seed(0)
neck = PAFPN(act_cfg=dict(type="ReLU"))
head = nn.Conv2d(8, 5, 1)                                     # objectness + 4 box deltas per location
optimizer = torch.optim.SGD(list(neck.parameters()) + list(head.parameters()), lr=0.01)
for it in range(2):
    outs = [head(o) for o in neck([torch.randn(2, 4, 16, 16), torch.randn(2, 8, 8, 8), torch.randn(2, 16, 4, 4)])]
    loss = sum(F.smooth_l1_loss(o, torch.zeros_like(o)) for o in outs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
