"""Truncated BPTT on a spiking neuron: an update every K time steps, the membrane carried on.

Rewritten from jeshraghian/snntorch#172 ("TBPTT mode gives error about K parameter on time
varying data"): the maintainer recommends a manual loop with `backward()` every K steps and:
"Following each update, the state variables should be detached from the computational graph to
avoid backpropagating through them again: e.g., `mem.detach_()`".
"""
import torch
import torch.nn as nn

SOURCE = "jeshraghian/snntorch#172"
CATEGORY = "filter-solver"
CULPRIT = "mem"
CAUSE = "the membrane potential carried past an update keeps the freed graph"
FIX_KIND = "detach-carried"
ERROR = "second time"

torch.manual_seed(0)
fc, beta, K = nn.Linear(3, 2), 0.8, 5
optimizer = torch.optim.Adam(fc.parameters(), lr=1e-2)
signal, target = torch.randn(20, 3), torch.rand(20, 2)
mem, loss = torch.zeros(2), 0.0
for t in range(20):
    mem = beta * mem + fc(signal[t])
    spk = torch.sigmoid(4 * (mem - 1.0))
    mem = mem - spk
    loss = loss + ((spk - target[t]) ** 2).sum()
    if (t + 1) % K == 0:
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = 0.0  # BUG
        # FIX: loss = 0.0; mem = mem.detach()
