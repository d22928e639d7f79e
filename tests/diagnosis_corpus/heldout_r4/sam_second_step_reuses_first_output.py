"""Sharpness-aware minimisation (SAM): each step takes the gradient at the weights, moves the
weights to the worst point nearby (`first_step`), takes the gradient there, then restores the
weights and steps the base optimizer with that second gradient (`second_step`).

Rewritten from davda54/sam#45 ("RuntimeError: Trying to backward through the graph a second time,
but the saved intermediate results have already been freed"): the reporter computed
`output = model(images)` once and wrote `criterion(output, target).backward()  # make sure to do a
full forward pass` for the second pass, copying the comment of the repository's README but not its
code. The README's (the maintainer's) usage is `criterion(model(input), target).backward()`: the
second loss needs a new forward pass at the perturbed weights, and the first pass's graph was freed
by the first backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "davda54/sam#45"
CATEGORY = "two-backwards"
CULPRIT = "output"
CAUSE = "the second SAM pass backwards the first forward pass's freed graph"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("Each loss trains the whole classifier: the first gives the ascent direction at the weights, "
          "the second, at the perturbed weights, gives the gradient the base optimizer steps with.")
GRADS = "model.parameters()"


class SAM:
    def __init__(self, params, base_optimizer, rho=0.05):
        self.params, self.base_optimizer, self.rho, self.e_w = list(params), base_optimizer, rho, []

    @torch.no_grad()
    def first_step(self):
        norm = torch.norm(torch.stack([p.grad.norm() for p in self.params]))
        self.e_w = [p.grad * self.rho / (norm + 1e-12) for p in self.params]
        for p, e in zip(self.params, self.e_w):
            p.add_(e)                                    # climb to the local maximum
        self.base_optimizer.zero_grad()

    @torch.no_grad()
    def second_step(self):
        for p, e in zip(self.params, self.e_w):
            p.sub_(e)                                    # back to the weights, then the real update
        self.base_optimizer.step()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = SAM(model.parameters(), torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
for step in range(2):
    images, target = torch.randn(8, 10), torch.randint(0, 3, (8,))
    output = model(images)
    loss = F.cross_entropy(output, target)               # first forward-backward pass
    loss.backward()
    optimizer.first_step()
    F.cross_entropy(output, target).backward()  # BUG
    # FIX: F.cross_entropy(model(images), target).backward()
    optimizer.second_step()
