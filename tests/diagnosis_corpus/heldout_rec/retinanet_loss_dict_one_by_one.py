"""A RetinaNet-style detector: a backbone with an FPN of two levels, a classification head and a
box head shared by both levels, and a dict of losses, backwarded one by one.

Rewritten from the PyTorch forum thread "Loss.backward() in RetinaNet(FPN)": asked why the
losses of the several outputs are added before `loss.backward()` rather than calling
`loss1.backward()`, `loss2.backward()` one by one, the answer shows the two are the same when the
first backward keeps the graph: `loss1.backward(retain_graph=True)` then `loss2.backward()` gives
the gradients of `(loss1 + loss2).backward()`, which is cheaper (one backward). Every loss here
is meant to train the shared backbone and FPN: detaching their features would be wrong.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Loss.backward() in RetinaNet(FPN)"
CATEGORY = "two-backwards"
CULPRIT = "features"
CAUSE = "the first loss's backward frees the FPN features both losses share"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("Both losses train the shared backbone and FPN, and each trains its own head; their "
          "gradients are meant to add up in one optimizer step.")
GRADS = ["backbone.parameters()", "fpn.parameters()", "cls_head.parameters()", "box_head.parameters()"]

torch.manual_seed(0)
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
fpn = nn.ModuleList([nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1)])
cls_head, box_head = nn.Conv2d(8, 3, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)
params = [p for m in (backbone, fpn, cls_head, box_head) for p in m.parameters()]
optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9)
for step in range(2):
    images = torch.randn(2, 3, 16, 16)
    c4 = backbone(images)
    features = [fpn[0](c4), fpn[1](F.max_pool2d(c4, 2))]
    cls_logits = [cls_head(f).flatten(2) for f in features]
    box_deltas = [box_head(f).flatten(2) for f in features]
    labels = [torch.randint(0, 3, (2, f.shape[2] * f.shape[3])) for f in features]
    loss_dict = {
        "classification": sum(F.cross_entropy(c, t) for c, t in zip(cls_logits, labels)),
        "bbox_regression": sum(F.smooth_l1_loss(b, torch.zeros_like(b)) for b in box_deltas),
    }
    optimizer.zero_grad()
    for name in loss_dict:
        loss_dict[name].backward()  # BUG
        # FIX: loss_dict[name].backward(retain_graph=True)
    optimizer.step()
