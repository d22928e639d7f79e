"""Supervised contrastive learning trained in one stage: the encoder learns from a SupCon metric
loss on two augmented views, and a linear classifier is trained jointly on the encoder's features.

Rewritten from the PyTorch forum thread "Supervised Contrastive Learning 2-stage training
implementation": the paper notes that "the linear classifier can be trained jointly with the encoder
and projection networks by blocking gradient propagation from the linear classifier back to the
encoder", and the poster's training_step does `metric_loss.backward(); optimizer.step()` and then
`p = self.lin(e.detach())  # use detach to block gradients from classification to reach encoder`
before `classification_loss.backward()` (here with one optimizer for each part, which the poster
asks about). Without that detach the classification loss backwards into the encoder graph the
metric loss already freed, and would train the encoder if the graph were kept.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Supervised Contrastive Learning 2-stage training implementation"
CATEGORY = "two-backwards"
CULPRIT = "e"
CAUSE = "the classifier's loss backwards into the encoder graph the metric loss freed"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The SupCon metric loss trains the encoder and projection head; the cross-entropy loss trains only "
          "the linear classifier and must not train the encoder.")
GRADS = ["encoder.parameters()", "projection.parameters()", "lin.parameters()"]


def supcon_loss(z, y, temperature=0.5):
    sim = z @ z.t() / temperature
    self_mask = torch.eye(len(y), dtype=torch.bool)
    sim = sim.masked_fill(self_mask, -1e9)
    positives = (y[:, None] == y[None]) & ~self_mask
    log_prob = sim - sim.logsumexp(dim=1, keepdim=True)
    return -(log_prob * positives).sum(1).div(positives.sum(1).clamp(min=1)).mean()


torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
projection, lin = nn.Linear(10, 8), nn.Linear(10, 2)
enc_optimizer = torch.optim.SGD([*encoder.parameters(), *projection.parameters()], lr=0.1)
cls_optimizer = torch.optim.SGD(lin.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(8, 20), torch.randint(0, 2, (8,))
    views = torch.cat([x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)])
    e = encoder(views)
    metric_loss = supcon_loss(F.normalize(projection(e), dim=1), torch.cat([y, y]))
    enc_optimizer.zero_grad()
    metric_loss.backward()
    enc_optimizer.step()
    cls_optimizer.zero_grad()
    p = lin(e)  # BUG
    # FIX: p = lin(e.detach())
    classification_loss = F.cross_entropy(p, torch.cat([y, y]))
    classification_loss.backward()
    cls_optimizer.step()
