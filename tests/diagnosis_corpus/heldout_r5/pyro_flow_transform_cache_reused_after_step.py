"""Density estimation with a Pyro-style normalizing flow: a coupling TransformModule (cache_size=1)
on a Normal base; the negative log-likelihood of a fixed data tensor X is minimised with Adam.

Rewritten from pyro-ppl/pyro#2542 ("First Normalizing flows Tutorial", merged): fritzo explains
that the tutorial's TransformModules "are dangerously reused even after being updated via
`optimizer.step()`. After being updated, their caches are invalid, and this was causing loud
errors 'cannot backward through graph a second time'". `log_prob(X)` inverts X through the
transform, and for the same X object the cache hands back last step's inverse, whose graph the
last backward freed. His fix adds `.clear_cache()` methods and calls them "explicitly ... after
`optimizer.step()`" (detaching the arguments of `log_prob` had bypassed the cache but left the
invalid values lying around).
"""
import torch
import torch.nn as nn
from torch.distributions import Normal

SOURCE = "pyro-ppl/pyro#2542"
CATEGORY = "carried-state"
CULPRIT = "flow._cached_x_y"
CAUSE = "the transform's cache returns last step's inverse of the same data tensor"
FIX_KIND = "reset-per-episode"
ERROR = "second time"
INTENT = ("The negative log-likelihood of the data trains the coupling network, through this "
          "step's inverse pass of the data; the base distribution is fixed.")
GRADS = "flow.parameters()"


class AffineCoupling(nn.Module):   # a pyro TransformModule with cache_size=1, reduced
    def __init__(self):
        super().__init__()
        self.net, self._cached_x_y = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 2)), (None, None)

    def inv(self, y):
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        shift, log_scale = self.net(y[:, :1]).unbind(-1)
        x = torch.stack([y[:, 0], (y[:, 1] - shift) * torch.exp(-log_scale)], dim=1)
        self._cached_x_y = (x, y)
        return x

    def log_abs_det_jacobian(self, x, y):
        return self.net(x[:, :1])[:, 1]

    def clear_cache(self):   # added by the fix
        self._cached_x_y = (None, None)


torch.manual_seed(0)
X = torch.randn(64, 2) * torch.tensor([1.0, 0.3]) + torch.tensor([0.0, 1.0])
base, flow = Normal(torch.zeros(2), torch.ones(2)), AffineCoupling()
optimizer = torch.optim.Adam(flow.parameters(), lr=5e-3)
for step in range(3):
    optimizer.zero_grad()
    x = flow.inv(X)   # TransformedDistribution.log_prob(X)
    loss = -(base.log_prob(x).sum(-1) - flow.log_abs_det_jacobian(x, X)).mean()
    loss.backward()
    optimizer.step()  # BUG
    # FIX: optimizer.step(); flow.clear_cache()
