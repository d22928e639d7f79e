"""Gradient accumulation over two batches: the losses are summed and backpropagated every second
batch; the total is never started again, so the next window's backward runs into the last one's."""
import torch
import torch.nn as nn

INTENT = "Each optimizer step trains the linear model on the summed loss of the two batches since the last step."
GRADS = "net.parameters()"
RULE = "running-total"
KIND = "reset-per-episode"

torch.manual_seed(0)
net = nn.Linear(5, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
total = 0
for i in range(6):
    x, y = torch.randn(8, 5), torch.randn(8, 1)
    loss = nn.functional.mse_loss(net(x), y)
    total = total + loss
    if i % 2 == 1:
        opt.zero_grad()
        total.backward()  # BUG
        # FIX: total.backward(); total = 0
        opt.step()
