"""MAML whose fast weights are made once, before the task loop, instead of once per task.

Rewritten from learnables/learn2learn#169 ("About 'Clone' Function"): the maintainer explains
that each task adapts its own `learner = maml.clone()` of the meta-parameters, so gradients
flow back through the adaptation to the original module. Here the functional form: the fast
weights must restart from the meta-parameters for every task.
"""
import torch

SOURCE = "learnables/learn2learn#169"
CATEGORY = "meta-learning"
CULPRIT = "fast_weights"
CAUSE = "fast weights adapted on the previous task carry its freed graph"
FIX_KIND = "reset-per-episode"
ERROR = "second time"

torch.manual_seed(0)
w = torch.randn(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
meta_opt = torch.optim.Adam([w, b], lr=1e-2)


def model(x, params):
    return x @ params[0] + params[1]


fast_weights = [w, b]
for task in range(4):
    slope = torch.randn(3, 1)
    x_s, x_q = torch.randn(8, 3), torch.randn(8, 3)
    params = fast_weights  # BUG
    # FIX: params = [w, b]
    for inner in range(2):
        inner_loss = ((model(x_s, params) - x_s @ slope) ** 2).mean()
        grads = torch.autograd.grad(inner_loss, params, create_graph=True)
        params = [p - 0.1 * g for p, g in zip(params, grads)]
    meta_loss = ((model(x_q, params) - x_q @ slope) ** 2).mean()
    meta_opt.zero_grad()
    meta_loss.backward()
    meta_opt.step()
    fast_weights = params          # the next task goes on from the adapted weights
