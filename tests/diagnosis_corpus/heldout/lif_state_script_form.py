"""A spiking (LIF) neuron cell whose state is fed back into the next batch; script form.

Rewritten from norse/norse#130 ("Reused state crashes subsequent backward passes"): reusing the
state `s` returned by a LIFCell in the next forward-backward raises the error; the maintainers
closed it as user code: "If for some reason the user wanted to do [this] he would have to detach
s from the previous computation graph himself." The loop runs inside `def train()`.
"""
import torch
import torch.nn as nn

SOURCE = "norse/norse#130"
CATEGORY = "filter-solver"
CULPRIT = "s"
CAUSE = "the neuron state from the previous batch carries its freed graph"
FIX_KIND = "detach-carried"
ERROR = "second time"


class LIFCell(nn.Module):
    def __init__(self, n_in, n_out, tau=0.9):
        super().__init__()
        self.fc, self.tau = nn.Linear(n_in, n_out), tau

    def forward(self, x, s=None):
        v = torch.zeros(x.shape[0], self.fc.out_features) if s is None else s
        v = self.tau * v + self.fc(x)
        spikes = torch.sigmoid(4 * (v - 1.0))          # a smooth surrogate of the threshold
        return spikes, v - spikes


def train():
    torch.manual_seed(0)
    model = LIFCell(12, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    s = None
    for batch in range(3):
        data = torch.rand(10, 12)
        out, s = model(data, s)  # BUG
        # FIX: out, s = model(data, None if s is None else s.detach())
        loss = out.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


train()
