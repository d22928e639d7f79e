"""A two-stage detector's region proposal head (mmdetection's RPNHead) configured with two convolutions
(`rpn_head=dict(num_convs=2)`) instead of one, trained on objectness and box deltas.
Rewritten from open-mmlab/mmdetection#7933 ("RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"): Cascade Mask R-CNN with `num_convs=2` fails
in backward. With one conv, `rpn_conv` is a bare Conv2d; with two it is a Sequential of ConvModules,
each ending in a ReLU, and the head still applies `x = F.relu(x, inplace=True)` to its output,
overwriting the ReLU output the last ReLU's backward needs. The fix given in the thread: "the following
fix resolves the error ... `x = F.relu(x, inplace=False)`" in rpn_head.py.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "open-mmlab/mmdetection#7933"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the head's in-place ReLU overwrites the output of the last ConvModule's ReLU, saved for its backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The objectness and box losses train the proposal head and the feature pyramid's last layer "
          "together.")
GRADS = ["neck.parameters()", "rpn_head.parameters()"]


def conv_module(cin, cout):   # mmcv's ConvModule: conv, then its own activation
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())


class RPNHead(nn.Module):
    def __init__(self, in_channels=8, feat_channels=8, num_anchors=3, num_convs=2):
        super().__init__()
        if num_convs > 1:
            self.rpn_conv = nn.Sequential(*[conv_module(in_channels if i == 0 else feat_channels, feat_channels)
                                            for i in range(num_convs)])
        else:
            self.rpn_conv = nn.Conv2d(in_channels, feat_channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(feat_channels, num_anchors, 1)
        self.rpn_reg = nn.Conv2d(feat_channels, num_anchors * 4, 1)

    def forward(self, x):
        x = self.rpn_conv(x)
        x = F.relu(x, inplace=True)  # BUG
        # FIX: x = F.relu(x, inplace=False)
        return self.rpn_cls(x), self.rpn_reg(x)


torch.manual_seed(0)
neck = nn.Conv2d(16, 8, 1)                       # the FPN's lateral conv for one level
rpn_head = RPNHead(num_convs=2)
optimizer = torch.optim.SGD(list(neck.parameters()) + list(rpn_head.parameters()), lr=0.02)
for it in range(2):
    backbone_feat, bbox_targets = torch.randn(2, 16, 6, 6), torch.randn(2, 12, 6, 6)
    labels = torch.randint(0, 2, (2, 3, 6, 6)).float()
    cls_score, bbox_pred = rpn_head(neck(backbone_feat))
    loss = F.binary_cross_entropy_with_logits(cls_score, labels) + F.smooth_l1_loss(bbox_pred, bbox_targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
