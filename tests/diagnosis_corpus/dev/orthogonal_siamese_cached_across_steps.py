"""Siamese embedding net whose projection is kept orthogonal by torch.nn.utils.parametrize; to save
recomputing the parametrization at each of the two branches, the weight is computed once inside
`parametrize.cached()`.

Rewritten from pytorch/pytorch#71062: with the cache enabled, training failed on the second
backward. albanD: "the cached result is computed in a differentiable way. So if you do multiple
backwards within the cached context, you are trying to backward multiple times indeed so I would
expect this error." The poster: "The issue was simply caching the forward pass not including the
computation of the loss". Here the cache is entered once around the training loop; entered anew
for each step instead (around that step's forward and loss), each step recomputes the weight.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize

SOURCE = "pytorch/pytorch#71062"
CATEGORY = "computed-once"
CULPRIT = None
CAUSE = "the parametrization's cached weight, with its graph, outlives the first step"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The contrastive loss trains the encoder and the orthogonal projection (through its "
          "unconstrained parameter), each step at that step's weights.")
GRADS = "model.parameters()"

class Orthogonal(nn.Module):
    def forward(self, X):                   # Cayley map of the skew-symmetric part
        A = X.triu(1) - X.triu(1).T
        eye = torch.eye(X.size(0))
        return torch.linalg.solve(eye + A, eye - A)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 8, bias=False))
parametrize.register_parametrization(model[2], "weight", Orthogonal())
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

def training_step(x0, x1, same):
    e0, e1 = model(x0), model(x1)           # both branches read the cached weight
    d = (e0 - e1).norm(dim=1)
    return (same * d ** 2 + (1 - same) * F.relu(1.0 - d) ** 2).mean()

with parametrize.cached():  # BUG
    # FIX: with torch.enable_grad():
    for step in range(2):
        x0, x1, same = torch.randn(16, 12), torch.randn(16, 12), torch.randint(0, 2, (16,)).float()
        loss = training_step(x0, x1, same)  # BUG
        # FIX: with parametrize.cached(): loss = training_step(x0, x1, same)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
