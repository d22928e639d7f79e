"""SAM's two forward-backward passes, the second adding its task losses onto the first's total.

Rewritten from davda54/sam#10: the reporter's code summed per-task losses with `loss += loss_t`
for the first pass, then kept adding the second pass's terms onto the same `loss` before the
second `loss.backward()`. The maintainer's README does two separate forward-backward passes:
the second pass's loss starts from zero.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "davda54/sam#10"
CATEGORY = "accumulated-loss"
CULPRIT = "loss"
CAUSE = "the second pass's sum starts from the first pass's backwarded loss"
FIX_KIND = "reset-per-episode"
ERROR = "second time"

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
num_tasks = 3
for step in range(2):
    image, target = torch.randn(8, 6), torch.randn(8, 3)
    output = model(image)
    loss = 0
    for t in range(num_tasks):
        loss += F.mse_loss(output[:, t], target[:, t])
    optimizer.zero_grad()
    loss.backward()
    with torch.no_grad():                      # first step: climb to the worst nearby weights
        eps = [0.05 * p.grad / (p.grad.norm() + 1e-12) for p in model.parameters()]
        for p, e in zip(model.parameters(), eps):
            p.add_(e)
    output = model(image)  # BUG
    # FIX: output = model(image); loss = 0
    for t in range(num_tasks):
        loss += F.mse_loss(output[:, t], target[:, t])
    optimizer.zero_grad()
    loss.backward()
    with torch.no_grad():                      # second step: back, then the real update
        for p, e in zip(model.parameters(), eps):
            p.sub_(e)
    optimizer.step()
