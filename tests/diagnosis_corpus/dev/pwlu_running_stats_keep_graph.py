"""A piecewise linear unit (PWLU) activation whose region bounds follow running statistics of its
input: a running mean and a running variance, updated every training step and used by the next
step's forward.

Rewritten from MrGoriay/pwlu-pytorch#1 ("About your code in pwlu"): the statistics were computed
from `x`, "It seems that you forgot to use detach() so that the tensor x can detach from cau
graph"; the maintainer "implemented your fix", `mean = x.detach().mean(...)` and
`var = x.detach().var(...)`. Without it both running statistics carry the last step's graph into
the next forward, two carriers at once; the fix detaches them where they are computed.
"""
import torch
import torch.nn as nn

SOURCE = "MrGoriay/pwlu-pytorch#1"
CATEGORY = "carried-state"
CULPRIT = ["act.running_mean", "act.running_var"]
CAUSE = "running mean and variance of the input carry the previous step's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The regression loss trains the linear layers and the activation's points; the running "
          "statistics only place the regions and must not be trained through.")
GRADS = ["net.parameters()"]


class PWLU(nn.Module):
    def __init__(self, n_regions=6, momentum=0.9):
        super().__init__()
        self.points = nn.Parameter(torch.linspace(-3, 3, n_regions + 1).clamp(min=0))
        self.momentum, self.running_mean, self.running_var = momentum, torch.zeros(()), torch.ones(())

    def forward(self, x):
        if self.training:
            mean = x.mean()  # BUG
            # FIX: mean = x.detach().mean()
            var = x.var()  # BUG
            # FIX: var = x.detach().var()
            self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * mean
            self.running_var = self.momentum * self.running_var + (1 - self.momentum) * var
        left, width = self.running_mean - 3 * self.running_var.sqrt(), 6 * self.running_var.sqrt() / (len(self.points) - 1)
        pos = ((x - left) / width).clamp(0, len(self.points) - 1 - 1e-4)
        idx = pos.floor().long()
        return torch.lerp(self.points[idx], self.points[idx + 1], pos - idx)


torch.manual_seed(0)
act = PWLU()
net = nn.Sequential(nn.Linear(4, 16), act, nn.Linear(16, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(32, 4)
    loss = nn.functional.mse_loss(net(x), x.sum(1, keepdim=True).abs())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
