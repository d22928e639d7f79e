"""Variational fitting with torch.distributions: a Normal distribution whose scale is the exp of a
log-std parameter is fitted to a target Normal by minimising a Monte-Carlo KL estimate from
reparameterised samples.

Rewritten from the PyTorch forum thread "Defining parameters by some transformation OR Retaining
sub-graphs, but not the whole graph": the poster (who works in Bayesian ML) defines
`std = torch.exp(log_std)` and `dist = dd.Normal(loc=mean, scale=std)` once, "From here I want to
ONLY refer to this", and the loop over `dist.rsample(...)` fails: "After the first backward pass,
the part of the graph the calculates the exponential of the parameter is automatically removed,
and not re-added." The second listing in the thread, which runs, "explicitly reference[s] the
`log_std` parameter in the loop, and recreate[s] the distribution" every iteration.
"""
import torch
import torch.distributions as dd
import torch.nn as nn

SOURCE = "Defining parameters by some transformation OR Retaining sub-graphs, but not the whole graph"
CATEGORY = "computed-once"
CULPRIT = "std"
CAUSE = "the scale exp(log_std) and the distribution are built once before the loop"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The KL cost trains the distribution's mean and log standard deviation, through this "
          "iteration's samples and log-density; the target distribution is fixed.")
GRADS = ["log_std", "mean"]

torch.manual_seed(0)
log_std = nn.Parameter(torch.Tensor([1]))
std = torch.exp(log_std)
mean = nn.Parameter(torch.Tensor([1]))
dist = dd.Normal(loc=mean, scale=std)
optim = torch.optim.SGD([log_std, mean], lr=1e-4)
target = dd.Normal(5, 5)
for i in range(3):
    samples = dist.rsample((1000,))  # BUG
    # FIX: dist = dd.Normal(loc=mean, scale=torch.exp(log_std)); samples = dist.rsample((1000,))
    cost = -(target.log_prob(samples) - dist.log_prob(samples)).sum()
    optim.zero_grad()
    cost.backward()
    optim.step()
