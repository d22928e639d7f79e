"""A mixed-precision style helper that scales a loss and calls backward, called once for each of two
heads' losses on one shared trunk: the first call frees the trunk's graph. The helper's backward line
is the same for both calls; the lines that call it are not."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "Both heads' losses train the shared trunk and their own head."
GRADS = ["trunk.parameters()", "head_a.parameters()", "head_b.parameters()"]
RULE = "reused-after-backward"
KIND = "retain-or-sum"


class Scaler:
    def __init__(self, scale=64.0):
        self.scale = scale

    def backward(self, loss):
        (loss * self.scale).backward()  # BUG
        # FIX: (loss * self.scale).backward(retain_graph=True)

    def unscale(self, params):
        for p in params:
            p.grad /= self.scale


torch.manual_seed(0)
trunk, head_a, head_b = nn.Linear(6, 8), nn.Linear(8, 1), nn.Linear(8, 2)
params = [*trunk.parameters(), *head_a.parameters(), *head_b.parameters()]
scaler = Scaler()
x, y, c = torch.randn(5, 6), torch.randn(5, 1), torch.randint(0, 2, (5,))
features = torch.relu(trunk(x))
loss_a, loss_b = F.mse_loss(head_a(features), y), F.cross_entropy(head_b(features), c)
scaler.backward(loss_a)
scaler.backward(loss_b)
scaler.unscale(params)
