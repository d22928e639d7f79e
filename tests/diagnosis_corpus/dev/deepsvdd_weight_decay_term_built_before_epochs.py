"""Deep SVDD anomaly detection: a bias-free network maps normal samples close to a fixed centre c;
the loss is the mean squared distance to c plus an L2 weight penalty.

Rewritten from yzhao062/pyod#704 ("Fix DeepSVDD not training due to disabled backward pass",
merged), which fixes pyod#606: DeepSVDD's `fit()` had `loss.backward()` commented out, and "simply
uncommenting the line raises ... Trying to backward through the graph a second time ... because
the L2 penalty term `w_d` was built once before the epoch loop and then added to every batch's
loss, so the second `backward()` re-traverses its already-freed graph." The merged fix:
"Recompute `w_d` inside the batch loop, so it belongs to the current batch's graph". (The
follow-up pyod#711 also detaches the centre, computed here under no_grad.)
"""
import torch
import torch.nn as nn


def l2_penalty(model, weight_decay=1e-3):
    return weight_decay * sum(torch.linalg.norm(w) for w in model.parameters())


SOURCE = "yzhao062/pyod#704"
CATEGORY = "computed-once"
CULPRIT = "w_d"
CAUSE = "the L2 weight penalty is built once before the epoch loop"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The distance-to-centre loss and the L2 penalty of the current weights train the "
          "network; the centre c is fixed.")
GRADS = "model.parameters()"

torch.manual_seed(0)
X = torch.randn(32, 6)
model = nn.Sequential(nn.Linear(6, 8, bias=False), nn.ReLU(), nn.Linear(8, 4, bias=False))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
with torch.no_grad():
    c = model(X).mean(0)
w_d = l2_penalty(model)
for epoch in range(2):
    for x in X.split(8):
        outputs = model(x)
        dist = torch.sum((outputs - c) ** 2, dim=-1)
        loss = torch.mean(dist) + w_d  # BUG
        # FIX: loss = torch.mean(dist) + l2_penalty(model)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
