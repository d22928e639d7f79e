"""A spiking network whose leaky neurons keep their membrane potential from the previous batch.

Rewritten from jeshraghian/snntorch#250 ("Basic S-CNN - RuntimeError: Trying to backward through
the graph a second time; try [retain_graph=True]"): the accepted fix resets the hidden states of
every LIF neuron at the start of each forward, `utils.reset(self.net)`.
"""
import torch
import torch.nn as nn

SOURCE = "jeshraghian/snntorch#250"
CATEGORY = "filter-solver"
CULPRIT = "lif1.mem"
CAUSE = "the neuron's membrane potential is carried into the next batch"
FIX_KIND = "reset-per-episode"
ERROR = "second time"


class Leaky(nn.Module):
    def __init__(self, beta=0.9):
        super().__init__()
        self.beta = beta
        self.reset()

    def reset(self):
        self.mem = torch.zeros(1)

    def forward(self, x):
        self.mem = self.beta * self.mem + x
        spk = torch.sigmoid(5 * (self.mem - 1.0))
        self.mem = self.mem - spk
        return spk, self.mem


torch.manual_seed(0)
fc1, lif1 = nn.Linear(10, 6), Leaky()
optimizer = torch.optim.Adam(fc1.parameters(), lr=1e-2)
for batch in range(3):
    data, targets = torch.rand(4, 10), torch.rand(4, 6)
    spk_rec = []  # BUG
    # FIX: spk_rec = []; lif1.reset()
    for step in range(5):
        spk, mem = lif1(fc1(data))
        spk_rec.append(spk)
    loss = ((torch.stack(spk_rec).mean(0) - targets) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
