"""Anomaly Transformer's minimax training: two losses over one forward (each detaching the other
association), and an optimizer step after each backward.

Rewritten from thuml/Anomaly-Transformer#1 ("loss2.backward():runtime error"): the solver's
`loss1.backward(retain_graph=True); self.optimizer.step(); loss2.backward(); self.optimizer.step()`
raised "one of the variables needed for gradient computation has been modified by an inplace
operation: [...], which is output 0 of AsStridedBackward0"; commenting out the first
`self.optimizer.step()` "worked!" (the reporter, closing it). Both backwards then run before the
one step: the minimax is in which association each loss detaches, not in the order of steps.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "thuml/Anomaly-Transformer#1"
CATEGORY = "inplace"
CULPRIT = "model.out.weight"
CAUSE = "optimizer.step() after loss1 rewrites weights loss2's backward needs"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("Both losses train the same model in one optimizer step: loss1 pushes the series "
          "association away from the (detached) prior, loss2 pulls the prior towards the (detached) series.")
GRADS = "model.parameters()"


class AnomalyAttention(nn.Module):
    def __init__(self, d=8, win=10):
        super().__init__()
        self.q, self.k, self.v, self.sigma = nn.Linear(d, d), nn.Linear(d, d, bias=False), nn.Linear(d, d), nn.Linear(d, 1)
        self.out, self.dist = nn.Linear(d, d), torch.arange(win)[:, None] - torch.arange(win)[None]

    def forward(self, x):
        series = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) / 8 ** 0.5, -1)
        s = torch.sigmoid(self.sigma(x)) * 3 + 1e-3
        prior = torch.exp(-self.dist.float() ** 2 / (2 * s ** 2))
        prior = prior / prior.sum(-1, keepdim=True)
        return self.out(series @ self.v(x)), series, prior


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean()


torch.manual_seed(0)
model, k = AnomalyAttention(), 3.0
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
for it in range(2):
    x = torch.randn(4, 10, 8)
    out, series, prior = model(x)
    rec_loss = F.mse_loss(out, x)
    series_loss = kl(series, prior.detach()) + kl(prior.detach(), series)
    prior_loss = kl(prior, series.detach()) + kl(series.detach(), prior)
    loss1, loss2 = rec_loss - k * series_loss, rec_loss + k * prior_loss
    optimizer.zero_grad()
    loss1.backward(retain_graph=True)
    optimizer.step()  # BUG
    # FIX: pass
    loss2.backward()
    optimizer.step()
