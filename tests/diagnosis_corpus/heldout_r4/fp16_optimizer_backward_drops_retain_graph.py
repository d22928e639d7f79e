"""Mixed-precision training with apex's FP16_Optimizer: the loss goes through
`optimizer.backward(loss)`, which multiplies it by the loss scale and backwards it, and
`update_master_grads()` unscales the accumulated grads before the step. A tabular model with two
heads calls it once per loss, with `update_master_grads=False`, then steps once.

Rewritten from NVIDIA/apex#85 ("FP16_Optimizer has no way to "retain_graph=True""): "I need to call
"backward" multiple times" but `optimizer.backward(loss, retain_graph=True)` was a TypeError, and
`optimizer.backward(loss1, update_master_grads=False); optimizer.backward(loss2, ...)` raised
"Trying to backward through the graph a second time". The maintainer: "I'll add the option to forward
retain_graph=True to optimizer.backward(loss)", then "I've added the option and updated the docs ...
from the recipe's perspective I guess it's no different from accumulating gradients via multiple
backward passes". The fix: the wrapper forwards `retain_graph`, and the first call passes True.
The forward runs under CPU autocast (bfloat16); apex's fp32 master copies are left out."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "NVIDIA/apex#85"
CATEGORY = "two-backwards"
CULPRIT = "features"
CAUSE = "the scaled backward of the first loss frees the shared trunk's graph"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("Both the regression loss and the classification loss train the shared trunk, and each trains "
          "its own head; their gradients add up before the one optimizer step.")
GRADS = ["trunk.parameters()", "reg_head.parameters()", "cls_head.parameters()"]


class FP16_Optimizer:
    def __init__(self, optimizer, static_loss_scale=128.0):
        self.optimizer, self.loss_scale = optimizer, static_loss_scale

    def backward(self, loss, update_master_grads=True):  # BUG
        # FIX: def backward(self, loss, update_master_grads=True, retain_graph=False):
        (loss.float() * self.loss_scale).backward()  # BUG
        # FIX: (loss.float() * self.loss_scale).backward(retain_graph=retain_graph)
        if update_master_grads:
            self.update_master_grads()

    def update_master_grads(self):
        for p in (p for group in self.optimizer.param_groups for p in group["params"]):
            p.grad.div_(self.loss_scale)


torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
reg_head, cls_head = nn.Linear(16, 1), nn.Linear(16, 3)
optimizer = FP16_Optimizer(torch.optim.SGD([*trunk.parameters(), *reg_head.parameters(), *cls_head.parameters()], lr=0.01))
for step in range(2):
    x, y_reg, y_cls = torch.randn(8, 12), torch.randn(8, 1), torch.randint(0, 3, (8,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        features = trunk(x)
        loss1, loss2 = F.mse_loss(reg_head(features).float(), y_reg), F.cross_entropy(cls_head(features).float(), y_cls)
    optimizer.optimizer.zero_grad()
    optimizer.backward(loss1, update_master_grads=False)  # BUG
    # FIX: optimizer.backward(loss1, update_master_grads=False, retain_graph=True)
    optimizer.backward(loss2, update_master_grads=False)
    optimizer.update_master_grads()
    optimizer.optimizer.step()
