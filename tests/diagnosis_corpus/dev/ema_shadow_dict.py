"""A mean-teacher EMA kept in a plain object's `shadow` dict, updated from the parameters themselves.

Rewritten from the PyTorch forum thread "How to apply exponential moving average decay for
variables?": the accepted EMA is a plain class (not a Module, "since you don't want to take into
account the EMA correction of your parameters while computing the next gradient") whose shadow is
registered and updated with `param.data`, outside the graph. Here the update uses `param`, and
the decay is a tensor (warm-up), so each step's update saves it; the teacher's loss reaches them.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "How to apply exponential moving average decay for variables?"
CATEGORY = "carried-state"
CULPRIT = "ema.shadow['weight']"
CAUSE = "the shadow weights are updated with a graph that earlier steps freed"
FIX_KIND = "detach-carried"
ERROR = "second time"


class EMA:
    def __init__(self, mu):
        self.mu, self.shadow = mu, {}

    def register(self, name, val):
        self.shadow[name] = val.clone()

    def __call__(self, name, x, step):
        mu = torch.minimum(torch.tensor(self.mu), torch.tensor((1.0 + step) / (10.0 + step)))
        return mu * self.shadow[name] + (1.0 - mu) * x


torch.manual_seed(0)
student = nn.Linear(5, 3)
ema = EMA(0.999)
for name, param in student.named_parameters():
    ema.register(name, param.data)
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 5), torch.randn(8, 3)
    teacher_out = F.linear(x, ema.shadow["weight"], ema.shadow["bias"])
    loss = F.mse_loss(student(x), y) + F.mse_loss(student(x), teacher_out)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    for name, param in student.named_parameters():
        ema.shadow[name] = ema(name, param, step)  # BUG
        # FIX: ema.shadow[name] = ema(name, param.data, step)
