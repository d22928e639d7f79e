"""A sparse variational GP trained Pyro-style (model: u ~ p(u) = N(0, K_uu); guide: u ~ q(u)).

Rewritten from cornellius-gp/gpytorch#599 ("Don't cache prior_dist for VI", merged; gpleiss: "This
causes issues with Pyro models"). `VariationalStrategy.forward` memoized the prior it built,
`self._memoize_cache["prior_distribution_memo"] = MultivariateNormal(induc_mean, induc_induc_covar)`.
`__call__` clears the cache, but a Pyro model reads `prior_distribution` before calling the strategy:
it gets last step's memo, freed by last step's backward. The fix deletes the memo line."""
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, Normal

SOURCE = "cornellius-gp/gpytorch#599"
CATEGORY = "carried-state"
CULPRIT = "strategy._memoize_cache['prior_distribution_memo']"
CAUSE = "forward memoizes the prior covariance, read by the next step's model"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = "The ELBO trains the variational parameters, inducing points and lengthscale, its prior term through this step's K_uu."
GRADS = "strategy.parameters()"


class VariationalStrategy(nn.Module):   # gpytorch.variational.VariationalStrategy, March 2019, reduced
    def __init__(self, z):
        super().__init__()
        self.inducing_points, self.log_lengthscale = nn.Parameter(z), nn.Parameter(torch.zeros(()))
        self.variational_mean, self.chol = nn.Parameter(torch.zeros(len(z))), nn.Parameter(torch.eye(len(z)))
        self._memoize_cache = {}

    def kernel(self, a, b):
        return torch.exp(-0.5 * torch.cdist(a, b) ** 2 / self.log_lengthscale.exp() ** 2)

    @property
    def prior_distribution(self):   # @cached(name="prior_distribution_memo")
        z = self.inducing_points
        return MultivariateNormal(*self._memoize_cache.setdefault(
            "prior_distribution_memo", (torch.zeros(len(z)), self.kernel(z, z) + 1e-3 * torch.eye(len(z)))))

    def __call__(self, x):
        self._memoize_cache, z = {}, self.inducing_points   # the cache is cleared on every training call
        induc_induc_covar, induc_data_covar = self.kernel(z, z) + 1e-3 * torch.eye(len(z)), self.kernel(z, x)
        interp = torch.linalg.solve(induc_induc_covar, induc_data_covar)
        var = 1 - (induc_data_covar * interp).sum(0) + ((self.chol.tril().T @ interp) ** 2).sum(0)
        self._memoize_cache["prior_distribution_memo"] = (torch.zeros(len(z)), induc_induc_covar)  # BUG
        # FIX: pass
        return Normal(interp.T @ self.variational_mean, var.clamp_min(1e-6).sqrt())


torch.manual_seed(0)
x = torch.linspace(-2, 2, 20)[:, None]
y = torch.sin(2 * x[:, 0]) + 0.1 * torch.randn(20)
strategy = VariationalStrategy(torch.linspace(-2, 2, 5)[:, None])
optimizer = torch.optim.Adam(strategy.parameters(), lr=0.01)
for step in range(3):
    prior, q_u = strategy.prior_distribution, MultivariateNormal(strategy.variational_mean, scale_tril=strategy.chol.tril())
    u, f = q_u.rsample(), strategy(x)   # model: f ~ q(f | x), y ~ N(f, 0.1)
    elbo = Normal(f.loc, (f.scale ** 2 + 0.1).sqrt()).log_prob(y).sum() + prior.log_prob(u) - q_u.log_prob(u)
    optimizer.zero_grad()
    (-elbo).backward()
    optimizer.step()
