"""Two students trained side by side, each pulled towards the other's prediction (deep mutual
learning): each loss also uses the peer's output, and the first student's step runs before the
second student's loss is backpropagated. Both peer terms must be detached; one alone is half a fix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "Each student's loss trains that student only; the peer's prediction is a fixed target."
GRADS = ["a.parameters()", "b.parameters()"]
RULE = "reused-after-backward"
KIND = "detach-at-use"

torch.manual_seed(3)
a = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
b = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
opt_a, opt_b = torch.optim.Adam(a.parameters(), 1e-2), torch.optim.Adam(b.parameters(), 1e-2)
for _ in range(2):
    x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
    pa, pb = a(x), b(x)
    loss_a = F.cross_entropy(pa, y) + F.mse_loss(pa.softmax(1), pb.softmax(1))  # BUG
    # FIX: loss_a = F.cross_entropy(pa, y) + F.mse_loss(pa.softmax(1), pb.detach().softmax(1))
    opt_a.zero_grad()
    loss_a.backward()
    opt_a.step()
    loss_b = F.cross_entropy(pb, y) + F.mse_loss(pb.softmax(1), pa.softmax(1))  # BUG
    # FIX: loss_b = F.cross_entropy(pb, y) + F.mse_loss(pb.softmax(1), pa.detach().softmax(1))
    opt_b.zero_grad()
    loss_b.backward()
    opt_b.step()
