"""A one-step-ahead LSTM forecaster for a univariate series that keeps its hidden and cell state on
the module, so that each call of train_it continues from where the last one ended.

Rewritten from the PyTorch forum thread "RuntimeError: Trying to backward through the graph a
second time, but the buffers have already been freed. Specify retain_graph=True when calling
backward the first time": the poster's error comes "the second time I call loss.backward(), in a
function ... [that executes] one step of a recurrent network, which updates its hidden state in the
forward pass". albanD explains that backward frees "all the intermediary results"; retain_graph=True
is no remedy here, as the optimizer step between calls turns it into the in-place error (a CSDN post
on an LSTM carrying (h0, c0) across batches shows both errors and traces them to the hidden state).
The remedy is truncating the carried state, both h and c, at each call (repackage_hidden in
PyTorch's word_language_model example).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = ("RuntimeError: Trying to backward through the graph a second time, but the buffers have already "
          "been freed. Specify retain_graph=True when calling backward the first time")
CATEGORY = "carried-state"
CULPRIT = ["model.h", "model.c"]
CAUSE = "the hidden and cell state kept on the module carry the previous call's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each call's one-step forecast loss trains the LSTM cell and the output layer through that call's "
          "step only; the carried state is a constant starting point.")
GRADS = "model.parameters()"


class Forecaster(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.cell, self.out = nn.LSTMCell(1, hidden), nn.Linear(hidden, 1)
        self.h, self.c = torch.zeros(1, hidden), torch.zeros(1, hidden)

    def forward(self, x):
        h = self.h  # BUG
        # FIX: h = self.h.detach()
        c = self.c  # BUG
        # FIX: c = self.c.detach()
        self.h, self.c = self.cell(x, (h, c))
        return self.out(self.h)


torch.manual_seed(0)
series = torch.sin(torch.linspace(0, 6, 12)).reshape(-1, 1, 1)
model = Forecaster()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for t in range(len(series) - 1):                  # train_it(x, y)
    loss = F.mse_loss(model(series[t]), series[t + 1])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
