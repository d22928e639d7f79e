"""Spiking network (spikingjelly style): each multi-step sample runs T time steps through LIF neurons
whose membrane potential `v` is kept on the neuron module between calls.

Rewritten from fangwei123456/Spike-Element-Wise-ResNet#19 ("RuntimeError: Trying to backward through
the graph a second time"), raised in the neuron's backward. The maintainer (translated): check that
the code calls the reset function to reset the whole network's state after backpropagation; the
poster replied they added spikingjelly's functional.reset_net after the backward. As he explains in
spikingjelly#29, without it batch n starts from batch n-1's `v`, joining a graph already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "fangwei123456/Spike-Element-Wise-ResNet#19"
CATEGORY = "filter-solver"
CULPRIT = ["net[1].v", "net[3].v"]   # both neurons keep the last batch's potential (relabelled: reset_net resets both)
CAUSE = "the neurons keep the last batch's membrane potential with its freed graph"
FIX_KIND = "reset-per-episode"
ERROR = "second time"
INTENT = ("Each batch's classification loss trains both linear layers through that batch's T time "
          "steps only; every batch starts from the resting membrane potential.")
GRADS = "net.parameters()"

class Spike(torch.autograd.Function):       # Heaviside forward, arctan surrogate backward
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).float()
    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad / (1 + (torch.pi * x) ** 2)

class LIFNode(nn.Module):
    def __init__(self, tau=2.0, v_threshold=1.0):
        super().__init__()
        self.tau, self.v_threshold, self.v = tau, v_threshold, 0.0
    def forward(self, x):
        self.v = self.v + (x - self.v) / self.tau
        spike = Spike.apply(self.v - self.v_threshold)
        self.v = self.v * (1 - spike)       # hard reset to 0 where it fired
        return spike

def reset_net(net):
    for m in net.modules():
        if isinstance(m, LIFNode):
            m.v = 0.0

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 32), LIFNode(), nn.Linear(32, 4), LIFNode())
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
for batch in range(2):
    x, label = torch.rand(8, 10) * 2, torch.randint(0, 4, (8,))
    out = sum(net(x) for t in range(4)) / 4   # firing rate over T = 4 steps
    loss = F.mse_loss(out, F.one_hot(label, 4).float())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()  # BUG
    # FIX: optimizer.step(); reset_net(net)
