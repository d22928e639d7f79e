"""Fitting a small curve model with L-BFGS: the loss is computed once per epoch and the closure
only zeroes the gradients and calls backward on it. L-BFGS calls the closure several times per
step, and training crashes inside optimizer.step()."""
import torch
import torch.nn as nn

INTENT = "The mean squared error trains the model's weights; each closure call evaluates it at the current weights."
GRADS = "model.parameters()"
RULE = "closure-loss"
KIND = "recompute-in-step"

torch.manual_seed(0)
x = torch.linspace(-2, 2, 64).unsqueeze(1)
y = torch.sin(2 * x) + 0.1 * torch.randn_like(x)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
for _epoch in range(2):
    loss = ((model(x) - y) ** 2).mean()  # BUG
    # FIX: pass

    def closure():
        opt.zero_grad()  # BUG
        # FIX: opt.zero_grad(); loss = ((model(x) - y) ** 2).mean()
        loss.backward()  # noqa: B023 (the bug: the loss of the loop, not the closure's)
        return loss  # noqa: B023

    opt.step(closure)
