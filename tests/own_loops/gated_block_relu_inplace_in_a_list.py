"""A gated MLP block whose body is an nn.Sequential built from a list: the first layer of the body is
a ReLU made with inplace=True, to save memory. The block feeds the body the sigmoid gate, which the
sigmoid saved for its own backward."""
import torch
import torch.nn as nn

INTENT = "The regression loss trains every layer of the block."
GRADS = "block.parameters()"
RULE = "inplace-write"
KIND = "out-of-place"


class GatedBlock(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.proj = nn.Linear(d, d)
        layers = [nn.ReLU(inplace=True), nn.Linear(d, d)]  # BUG
        # FIX: layers = [nn.ReLU(inplace=False), nn.Linear(d, d)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        gate = torch.sigmoid(self.proj(x))
        return x * gate + self.body(gate)


torch.manual_seed(0)
block = GatedBlock()
opt = torch.optim.SGD(block.parameters(), lr=0.1)
for _step in range(2):
    x, y = torch.randn(6, 8), torch.randn(6, 8)
    loss = (block(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
