"""A mixture-of-experts layer adds its load-balancing loss to an attribute on every forward; the
training loop adds that attribute to the task loss. Nobody resets it between batches, and training
crashes at the second batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "Each batch's task loss and that batch's load-balancing loss train the router and the experts."
GRADS = "model.parameters()"
RULE = "carried-across-steps"
KIND = "reset-per-episode"


class MoE(nn.Module):
    def __init__(self, dim=16, n=4):
        super().__init__()
        self.router, self.experts = nn.Linear(dim, n), nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))
        self.aux_loss = 0.0

    def forward(self, x):
        gates = F.softmax(self.router(x), dim=-1)
        self.aux_loss = self.aux_loss + (gates.mean(0) ** 2).sum() * len(self.experts)
        return sum(g.unsqueeze(-1) * e(x) for g, e in zip(gates.unbind(-1), self.experts))


torch.manual_seed(0)
model = MoE()
head = nn.Linear(16, 3)
opt = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=1e-3)
for _batch in range(2):
    x, y = torch.randn(8, 16), torch.randint(0, 3, (8,))
    loss = F.cross_entropy(head(model(x)), y) + 0.01 * model.aux_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.aux_loss = model.aux_loss  # BUG
    # FIX: model.aux_loss = 0.0
