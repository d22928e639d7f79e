"""Bayesian optimisation with an exact Gaussian process: the GP's hyperparameters are fitted by
maximising the marginal likelihood, then a candidate point is moved by gradient ascent on an upper
confidence bound computed from the GP posterior, which caches the training-data solves (the mean cache
and the Cholesky factor) on its first call in eval mode, as GPyTorch's prediction strategy does.

Rewritten from cornellius-gp/gpytorch#554 ("Repeated posterior evaluation (and backward) with same
base_samples raises second backward issue", labelled bug): "If I use `detach_test_caches(True)` and
`fast_pred_var()`, there is no issue. However, when I ... set `detach_test_caches(False)`, then the
second backward issue is raised." A maintainer explains the setting in #1145: training through the
caches needs `detach_test_caches(False)`; by default the test caches are detached. Both caches are
built from the hyperparameters with their graph, and the first backward of the acquisition frees it.
"""
import math

import torch
import torch.nn as nn

SOURCE = "cornellius-gp/gpytorch#554"
CATEGORY = "computed-once"
CULPRIT = ["model._mean_cache", "model._chol_cache"]
CAUSE = "the posterior's caches keep the graph of the first evaluation, freed by its backward"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The marginal likelihood trains the GP hyperparameters; the acquisition trains only the "
          "candidate point, with the fitted GP fixed.")
GRADS = "x"


class ExactGP(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.train_x, self.train_y = train_x, train_y
        self.raw_lengthscale, self.raw_outputscale, self.raw_noise = (nn.Parameter(torch.tensor(v)) for v in (0.0, 0.0, -2.0))
        self._mean_cache = self._chol_cache = None

    def kernel(self, a, b):
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return self.raw_outputscale.exp() * torch.exp(-0.5 * d2 / self.raw_lengthscale.exp() ** 2)

    def train(self, mode=True):
        self._mean_cache = self._chol_cache = None          # caches are rebuilt after a mode change
        return super().train(mode)

    def train_kernel(self):
        return self.kernel(self.train_x, self.train_x) + self.raw_noise.exp() * torch.eye(len(self.train_x))

    def marginal_log_likelihood(self):
        L = torch.linalg.cholesky(self.train_kernel())
        alpha = torch.cholesky_solve(self.train_y[:, None], L)
        n = len(self.train_x)
        return -0.5 * (self.train_y[:, None] * alpha).sum() - L.diagonal().log().sum() - 0.5 * n * math.log(2 * math.pi)

    def posterior(self, x):
        if self._mean_cache is None:
            L = torch.linalg.cholesky(self.train_kernel())
            self._chol_cache = L  # BUG
            # FIX: self._chol_cache = L.detach()
            self._mean_cache = torch.cholesky_solve(self.train_y[:, None], L)  # BUG
            # FIX: self._mean_cache = torch.cholesky_solve(self.train_y[:, None], L).detach()
        k = self.kernel(x, self.train_x)
        mean = (k @ self._mean_cache).squeeze(-1)
        var = self.raw_outputscale.exp() - (k * torch.cholesky_solve(k.t(), self._chol_cache).t()).sum(-1)
        return mean, var.clamp_min(1e-9)


torch.manual_seed(0)
train_x = torch.rand(8, 2)
train_y = torch.sin(6 * train_x[:, 0]) + 0.1 * torch.randn(8)
model = ExactGP(train_x, train_y)
mll_optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
model.train()
for it in range(3):
    mll_optimizer.zero_grad()
    (-model.marginal_log_likelihood()).backward()
    mll_optimizer.step()

model.eval()
x = torch.rand(1, 2, requires_grad=True)
acq_optimizer = torch.optim.Adam([x], lr=0.05)
for it in range(3):
    mean, var = model.posterior(x)
    ucb = mean + 2.0 * var.sqrt()
    acq_optimizer.zero_grad()
    (-ucb.sum()).backward()
    acq_optimizer.step()
