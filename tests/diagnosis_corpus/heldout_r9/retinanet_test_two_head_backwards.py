"""The smoke test at the bottom of pytorch-retinanet's retinanet.py: a RetinaNet (an FPN trunk with
a box-regression head and a classification head run on every pyramid level) is run once, and
random gradients are backpropagated from both heads' outputs.

Rewritten from kuangliu/pytorch-retinanet#38 ("Specify retain_graph=True when calling backward the
first time"): running retinanet.py's `test()` fails at `cls_preds.backward(cls_grads)` with "Trying
to backward through the graph a second time, but the buffers have already been freed. Specify
retain_graph=True when calling backward the first time." The answer points to the forum thread
on this error, whose accepted reply reads "You can call .backward(retain_graph=True) to make a
backward pass that will not delete intermediary results ... All but the last call to backward
should have the retain_graph=True option." Both heads read the same FPN feature maps, whose saved
tensors the first backward frees; both heads' gradients are meant to reach the shared trunk.
"""
import torch
import torch.nn as nn

SOURCE = "kuangliu/pytorch-retinanet#38"
CATEGORY = "two-backwards"
CULPRIT = "fms"
CAUSE = "the first head's backward frees the shared FPN graph the second head's backward needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The test sends gradients from both the box head and the class head back through the shared "
          "FPN trunk; the trunk is trained by both, so both gradients must reach it.")
GRADS = "net.parameters()"


def make_head(out_planes):
    return nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(True), nn.Conv2d(16, out_planes, 3, padding=1))


torch.manual_seed(0)
num_anchors, num_classes = 9, 20
net = nn.ModuleDict(dict(c3=nn.Conv2d(3, 16, 3, stride=2, padding=1), c4=nn.Conv2d(16, 16, 3, stride=2, padding=1),
                         lateral=nn.Conv2d(16, 16, 1), loc_head=make_head(num_anchors * 4),
                         cls_head=make_head(num_anchors * num_classes)))
x = torch.randn(2, 3, 32, 32)
c3 = torch.relu(net["c3"](x))                                       # FPN50, two levels
c4 = torch.relu(net["c4"](c3))
fms = [torch.relu(net["lateral"](c3) + nn.functional.interpolate(c4, scale_factor=2.0)), c4]
loc_preds = torch.cat([net["loc_head"](fm).permute(0, 2, 3, 1).reshape(2, -1, 4) for fm in fms], 1)
cls_preds = torch.cat([net["cls_head"](fm).permute(0, 2, 3, 1).reshape(2, -1, num_classes) for fm in fms], 1)
loc_grads = torch.randn(loc_preds.size())
cls_grads = torch.randn(cls_preds.size())
loc_preds.backward(loc_grads)  # BUG
# FIX: loc_preds.backward(loc_grads, retain_graph=True)
cls_preds.backward(cls_grads)
