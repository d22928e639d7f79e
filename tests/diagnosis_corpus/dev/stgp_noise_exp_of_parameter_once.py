"""Mini-GP's spatio-temporal Gaussian process demo: a GP regression over (location, time) inputs of a
sensor time series, its kernel hyperparameters and noise level learned by minimising the negative
log marginal likelihood with Adam.

Rewritten from IceLab-X/MiniGP#13 ("[stgp demo] RuntimeError: Trying to backward through the graph a
second time"): the reporter pointed at one line of stgp_demo.py: "The nn.parameter object is not
collect, but only maintain the exp result unchanged despite of the training", i.e. the noise level
was stored as `torch.exp(nn.Parameter(...))`, a plain tensor computed once when the model is built,
so the module never registers the parameter and every step backwards through the same `exp`. The
maintainer: "I have set the data to nn.Parameter and solved the problem": the model keeps the raw
(log) value as an `nn.Parameter` and takes its `exp` inside the likelihood, at every step.
"""
import math

import torch
import torch.nn as nn

SOURCE = "IceLab-X/MiniGP#13"
CATEGORY = "computed-once"
CULPRIT = "model.noise"
CAUSE = "the noise level is exp of a parameter, computed once at construction"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The negative log marginal likelihood trains the GP's hyperparameters: the spatial and temporal "
          "length scales, the signal variance and the noise level.")
GRADS = "model.parameters()"

class STGP(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_ls_space, self.log_ls_time = nn.Parameter(torch.tensor(0.0)), nn.Parameter(torch.tensor(0.0))
        self.log_scale = nn.Parameter(torch.tensor(0.0))
        self.noise = torch.exp(nn.Parameter(torch.tensor(-2.0)))  # BUG
        # FIX: self.log_noise = nn.Parameter(torch.tensor(-2.0))

    def kernel(self, s1, t1, s2, t2):
        d_space = torch.cdist(s1, s2) ** 2 / self.log_ls_space.exp() ** 2
        d_time = (t1[:, None] - t2[None, :]) ** 2 / self.log_ls_time.exp() ** 2
        return self.log_scale.exp() * torch.exp(-0.5 * (d_space + d_time))

    def negative_log_likelihood(self, s, t, y):
        noise = self.noise  # BUG
        # FIX: noise = torch.exp(self.log_noise)
        K = self.kernel(s, t, s, t) + noise * torch.eye(len(y))
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y[:, None], L)
        return 0.5 * (y[:, None] * alpha).sum() + torch.log(torch.diagonal(L)).sum() + 0.5 * len(y) * math.log(2 * math.pi)

torch.manual_seed(0)
space, time = torch.rand(12, 2), torch.linspace(0, 1, 12)
y = torch.sin(6 * time) + space[:, 0] + 0.1 * torch.randn(12)
model = STGP()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for it in range(3):
    optimizer.zero_grad()
    loss = model.negative_log_likelihood(space, time, y)
    loss.backward()
    optimizer.step()
