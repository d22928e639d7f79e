"""A spiking network with a stateful leaky integrate-and-fire layer that keeps its membrane
potential in a module buffer, reset at the start of every batch by `reset_states()`.

Rewritten from synsense/sinabs#5 ("[Bug]RuntimeError: Trying to backward through the graph a
second time, but the saved intermediate results have already been freed."): "This error is caused
by the `reset_states` method in the `StatefulLayer` class ... the in-place operation for reseting
the states buffer seems make the buffer still keep the computation graph", with
`buffer.zero_()`; "add a `.detach_()` operation after each resetting operation could solve this
problem": `buffer.zero_().detach_()`. The maintainer merged it ("this is fixed now"). Zeroing a
tensor in place records the zeroing in its graph, still linked to last batch's freed graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "synsense/sinabs#5"
CATEGORY = "filter-solver"
CULPRIT = "lif.v_mem"
CAUSE = "the reset zeroes the membrane buffer in place, which keeps it linked to last batch's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The cross-entropy of the output spike counts trains the input and readout weights through "
          "this batch's time steps only; the membrane potential starts each batch from zero as a constant.")
GRADS = ["fc_in.parameters()", "fc_out.parameters()"]


class StatefulLIF(nn.Module):
    def __init__(self, n, alpha=0.9, threshold=1.0):
        super().__init__()
        self.alpha, self.threshold = alpha, threshold
        self.register_buffer("v_mem", torch.zeros(1, n))

    def reset_states(self):
        for buffer in self.buffers():
            buffer.zero_()  # BUG
            # FIX: buffer.zero_().detach_()

    def forward(self, x):
        v = self.alpha * self.v_mem + x
        surrogate = torch.sigmoid(4 * (v - self.threshold))
        spikes = (v > self.threshold).float() + surrogate - surrogate.detach()
        self.v_mem = v - spikes * self.threshold
        return spikes


torch.manual_seed(0)
fc_in, lif, fc_out = nn.Linear(10, 20), StatefulLIF(20), nn.Linear(20, 3)
optimizer = torch.optim.Adam([*fc_in.parameters(), *fc_out.parameters()], lr=1e-3)
for batch in range(2):
    events, labels = (torch.rand(5, 1, 10) < 0.3).float(), torch.randint(0, 3, (1,))
    lif.reset_states()
    counts = sum(fc_out(lif(fc_in(events[t]))) for t in range(5))
    loss = F.cross_entropy(counts, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
