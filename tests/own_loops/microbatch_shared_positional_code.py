"""Gradient accumulation over micro-batches: a learned positional code is computed once, before the
loop over micro-batches, and each micro-batch's backward runs through it; the second backward finds
its graph freed by the first. No optimizer step runs between them."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "Every micro-batch's loss trains the positional table and the encoder; one step applies their sum."
GRADS = ["pos_table", "encoder.parameters()"]
RULE = "computed-once"
KIND = "recompute-in-step"

torch.manual_seed(0)
pos_table = nn.Parameter(torch.randn(16, 8) * 0.1)
encoder = nn.Linear(8, 8)
opt = torch.optim.Adam([pos_table, *encoder.parameters()], lr=1e-3)
pos = torch.tanh(pos_table)
batch = torch.randn(4, 16, 8)
opt.zero_grad()
for micro in batch.split(1):
    out = encoder(micro + pos)  # BUG
    # FIX: pos = torch.tanh(pos_table); out = encoder(micro + pos)
    loss = F.mse_loss(out, micro)
    loss.backward()
opt.step()
