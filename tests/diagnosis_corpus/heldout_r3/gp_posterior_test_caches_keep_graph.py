"""Bayesian optimisation with an exact GP (hyperparameters fitted beforehand, not shown): a candidate
point climbs an upper confidence bound from the posterior, which caches the training solves (mean
cache, Cholesky factor) on its first call, as GPyTorch's prediction strategy does. Rewritten from
cornellius-gp/gpytorch#554 ("Repeated posterior evaluation (and backward) with same base_samples raises
second backward issue", a bug): "If I use `detach_test_caches(True)` and `fast_pred_var()`, there is no
issue. However, when I ... set `detach_test_caches(False)`, then the second backward issue is raised."
A maintainer explains in #1145: training through the caches needs `detach_test_caches(False)`.
"""
import torch
import torch.nn as nn

SOURCE = "cornellius-gp/gpytorch#554"
CATEGORY = "computed-once"
CULPRIT = ["model._mean_cache", "model._chol_cache"]
CAUSE = "the posterior's caches keep the graph of the first evaluation, freed by its backward"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The acquisition trains only the candidate point; the fitted GP's hyperparameters are fixed "
          "and no loss here trains them.")
GRADS = "x"


class ExactGP(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.train_x, self.train_y, self._mean_cache, self._chol_cache = train_x, train_y, None, None
        self.raw_lengthscale, self.raw_outputscale, self.raw_noise = (nn.Parameter(torch.tensor(v)) for v in (0.0, 0.0, -2.0))

    def kernel(self, a, b):
        return self.raw_outputscale.exp() * torch.exp(-0.5 * torch.cdist(a, b) ** 2 / self.raw_lengthscale.exp() ** 2)

    def train_chol(self):
        K = self.kernel(self.train_x, self.train_x)
        return torch.linalg.cholesky(K + self.raw_noise.exp() * torch.eye(len(K)))

    def posterior(self, x):
        if self._mean_cache is None:
            L = self.train_chol()
            self._chol_cache = L  # BUG
            # FIX: self._chol_cache = L.detach()
            self._mean_cache = torch.cholesky_solve(self.train_y[:, None], L)  # BUG
            # FIX: self._mean_cache = torch.cholesky_solve(self.train_y[:, None], L).detach()
        k = self.kernel(x, self.train_x)
        var = self.raw_outputscale.exp() - (k * torch.cholesky_solve(k.t(), self._chol_cache).t()).sum(-1)
        return (k @ self._mean_cache).squeeze(-1), var.clamp_min(1e-9)


torch.manual_seed(0)
train_x = torch.rand(8, 2)
model = ExactGP(train_x, torch.sin(6 * train_x[:, 0]) + 0.1 * torch.randn(8))
model.eval()
x = torch.rand(1, 2, requires_grad=True)
acq_optimizer = torch.optim.Adam([x], lr=0.05)
for it in range(3):
    mean, var = model.posterior(x)
    acq_optimizer.zero_grad()
    (-(mean + 2.0 * var.sqrt()).sum()).backward()            # ascend the upper confidence bound
    acq_optimizer.step()
