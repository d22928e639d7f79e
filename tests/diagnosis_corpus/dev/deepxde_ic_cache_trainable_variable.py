"""An inverse PINN in DeepXDE's style (PyTorch backend): a network u(x, t) fits a diffusion
equation's residual, some observations and an initial condition sin(C x) with an unknown, trained
coefficient C; DeepXDE wraps the condition's function in `npfunc_range_autocache`, which memoises
its value per (id(X), beg, end). Rewritten from lululxvi/deepxde#2074 ("IC/BC caching causes
critical errors in inverse problems for IC/BC") and its PRs: with C inside sin(), "a double
`.backward()` (I am using PyTorch) execution error appears" (#2077). The fix proposed in #2094:
the cache "returns the value at the initial parameter and never updates, freezing the IC/BC loss
and its autograd graph. Use wrapper_nocache on this path".
"""
import math

import torch
import torch.nn as nn

SOURCE = "lululxvi/deepxde#2074"
CATEGORY = "computed-once"
CULPRIT = None
CAUSE = "the memoised initial-condition value keeps the first step's freed graph"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The residual, observation and initial-condition losses train the network, and the "
          "initial-condition loss also trains the unknown coefficient C through this step's sin(C x).")
GRADS = ["net.parameters()", "C"]


def npfunc_range_autocache(func):
    cache = {}
    def wrapper_cache(X, beg, end):
        key = (id(X), beg, end)
        if key not in cache:
            cache[key] = func(X[beg:end])
        return cache[key]
    def wrapper_nocache(X, beg, end): return func(X[beg:end])
    return wrapper_cache  # BUG
    # FIX: return wrapper_nocache


def pde(x, y):
    dy = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    dy_xx = torch.autograd.grad(dy[:, 0:1], x, torch.ones_like(y), create_graph=True)[0][:, 0:1]
    s = torch.sin(math.pi * x[:, 0:1])
    return dy[:, 1:2] - dy_xx + torch.exp(-x[:, 1:2]) * (s - math.pi ** 2 * s)


torch.manual_seed(0)
C = torch.tensor(2.0, requires_grad=True)                       # dde.Variable(2.0)
net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
ic_func = npfunc_range_autocache(lambda x: torch.sin(C * x[:, 0:1]) * torch.exp(-x[:, 1:2]))
x_ic = torch.stack([torch.linspace(-1, 1, 8), torch.zeros(8)], 1)
X = torch.cat([torch.rand(16, 2) * torch.tensor([2.0, 1.0]) - torch.tensor([1.0, 0.0]), x_ic, torch.rand(6, 2)]).requires_grad_()
observe_y = (torch.sin(math.pi * X[24:, 0:1]) * torch.exp(-X[24:, 1:2])).detach()
optimizer = torch.optim.Adam([*net.parameters(), C], lr=1e-3)
for epoch in range(2):
    y = net(X)
    f = pde(X, y)
    loss = (f[:16] ** 2).mean() + ((y[16:24] - ic_func(X, 16, 24)) ** 2).mean() + ((y[24:] - observe_y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
