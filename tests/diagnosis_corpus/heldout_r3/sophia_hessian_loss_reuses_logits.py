"""Language-model training with the Sophia optimizer: every step is a forward, a backward and an
optimizer step; every k steps, Sophia also refreshes its diagonal Hessian estimate (Gauss-Newton-
Bartlett) from a loss on labels sampled from the model's own predictions.

Rewritten from Liuhong99/Sophia#1 ("Trying to backward through the graph a second time"): the
error "happens when calling loss_sampled.backward()". The maintainer pointed to train_sophiag.py,
which runs a new forward for the Hessian update (`logits, _ = model(X, 0)` after `optimizer.step()`);
the poster: "I've designed an isolated function just to feed the model the same batch as the
training step into the update hessian part ... It's now working." Here the loop samples from the
training step's logits, whose graph that step's loss.backward() has freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Liuhong99/Sophia#1"
CATEGORY = "two-backwards"
CULPRIT = "logits"
CAUSE = "the Hessian loss reuses the training step's logits, freed by its backward"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The next-token loss trains the model; the sampled-label loss only estimates Sophia's "
          "Hessian, at the weights after this step's update.")
GRADS = "model.parameters()"

class SophiaG(torch.optim.Optimizer):       # the update rule of SophiaG, in short
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.99), rho=0.05):
        super().__init__(params, dict(lr=lr, betas=betas, rho=rho))

    @torch.no_grad()
    def update_hessian(self):
        for p in (p for g in self.param_groups for p in g["params"]):
            st = self.state.setdefault(p, {"m": torch.zeros_like(p), "h": torch.zeros_like(p)})
            st["h"].mul_(0.99).addcmul_(p.grad, p.grad, value=0.01)

    @torch.no_grad()
    def step(self, bs=64):
        for g in self.param_groups:
            for p in g["params"]:
                st = self.state.setdefault(p, {"m": torch.zeros_like(p), "h": torch.zeros_like(p)})
                st["m"].mul_(0.9).add_(p.grad, alpha=0.1)
                p.add_(-g["lr"] * (st["m"] / (g["rho"] * bs * st["h"] + 1e-15)).clamp(-1, 1))

torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(20, 16), nn.Linear(16, 20))
optimizer = SophiaG(model.parameters())
for it in range(4):
    X, Y = torch.randint(0, 20, (4, 8)), torch.randint(0, 20, (4, 8))
    optimizer.zero_grad(set_to_none=True)
    logits = model(X)
    F.cross_entropy(logits.view(-1, 20), Y.view(-1)).backward()
    optimizer.step(bs=32)
    if it % 2 == 1:                         # hess_interval = 2
        logits = logits  # BUG
        # FIX: logits = model(X)
        y_sample = torch.distributions.Categorical(logits=logits).sample()
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(logits.view(-1, 20), y_sample.view(-1)).backward()
        optimizer.update_hessian()
