"""Each step writes the network's output into a row of a tensor preallocated before the loop.

Rewritten from the Stack Overflow question Pytorch - why does preallocating memory cause
"trying to backward through the graph a second time": `out = torch.empty_like(...)` before the
loop and `out[i] = self(x)` inside it; the answer explains that `out`, declared outside the
loop, is a parent of every step's graph, while the plain version creates a new graph each step.
"""
import torch
import torch.nn as nn

SOURCE = "Pytorch - why does preallocating memory cause \"trying to backward through the graph a second time\""
CATEGORY = "carried-state"
CULPRIT = "out"
CAUSE = "every step's output is written into one tensor that keeps all their graphs"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
lossfn = nn.MSELoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
xs, ys = torch.randn(4, 3), torch.randn(4, 1)
out = torch.empty_like(ys)
for i, (x, y) in enumerate(zip(xs, ys)):
    optimizer.zero_grad()
    out[i] = net(x)  # BUG
    # FIX: pred = net(x)
    loss = lossfn(out[i], y)  # BUG
    # FIX: loss = lossfn(pred, y)
    loss.backward()
    optimizer.step()
