"""Synthetic regression targets made from "true" weights that were created with requires_grad=True.

Rewritten from zhangyu2234/Deep-learning-by-hand, notebook section Problems (a public
repository that reports "RuntimeError: Trying to backward through the graph a second time"): `Y = torch.mm(X, true_W) +
true_b` with `true_W`, `true_b` requiring grad gives Y a graph (grad_fn=<SliceBackward0> per
batch); every batch's loss goes back into it. The targets are data: they must be made without a
graph.
"""
import torch

SOURCE = "zhangyu2234/Deep-learning-by-hand, notebook section Problems"
CATEGORY = "computed-once"
CULPRIT = "Y"
CAUSE = "the targets were computed once, with a graph, before the loop"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
X = torch.randn(100, 2)
true_W = torch.randn(2, 1, requires_grad=True)
true_b = torch.randn(1, requires_grad=True)
Y = torch.mm(X, true_W) + true_b  # BUG
# FIX: Y = (torch.mm(X, true_W) + true_b).detach()
W = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for epoch in range(2):
    for i in range(0, 100, 20):
        x, y = X[i:i + 20], Y[i:i + 20]
        loss = ((torch.relu(x @ W + b) - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (W, b):
                p -= 0.03 * p.grad
                p.grad.zero_()
