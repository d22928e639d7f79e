"""Two losses from the log-probabilities of one Bernoulli distribution, backwarded one by one.

Rewritten from pytorch/pytorch#11192 ("Cannot Backward Twice Through Distribution"): `2 *
pi.log_prob(...)` and `3 * pi.log_prob(...)` backwarded separately raise, unlike two losses on a
plain leaf. The distribution computes its `logits` from `probs` once and caches them on the
object; both losses go through that shared graph, so the first backward must retain it (or the
two are summed).
"""
import torch
from torch.distributions import Bernoulli

SOURCE = "pytorch/pytorch#11192"
CATEGORY = "two-backwards"
CULPRIT = "pi.logits"
CAUSE = "both log-probs go through the logits the distribution cached"
FIX_KIND = "retain-or-sum"
ERROR = "second time"

torch.manual_seed(0)
p = torch.tensor(0.2, requires_grad=True)
pi = Bernoulli(p)
l1 = 2 * pi.log_prob(torch.tensor(1.0))
l2 = 3 * pi.log_prob(torch.tensor(0.0))
l1.backward()  # BUG
# FIX: l1.backward(retain_graph=True)
l2.backward()
