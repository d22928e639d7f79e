"""An LSTM forecaster trained with truncated backpropagation through time, Lightning style: the
trainer splits each batch of series into windows, calls training_step with the hidden state that the
previous window returned, steps the optimizer after each window, and detaches the hidden state in
between with its own helper.

Rewritten from Lightning-AI/pytorch-lightning#8145 ("Fix truncated_bptt_steps hiddens detach() and
improve docs"), merged: "It fixes the detach() on hiddens in the case it is a tuple of Tensors
(typically, for nn.LSTM)." The trainer's helper detached `hiddens` only when it was one tensor, so an
LSTM's (h, c) tuple reached the next window still attached to the window before, whose graph that
window's backward had freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Lightning-AI/pytorch-lightning#8145"
CATEGORY = "carried-state"
CULPRIT = "hiddens"
CAUSE = "the trainer's detach helper leaves an LSTM's (h, c) tuple attached"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each window's next-step loss trains the LSTM and the output layer through that window only; "
          "the (h, c) state carried in from the previous window is a starting value, not trained through.")
GRADS = ["lstm.parameters()", "proj.parameters()"]

torch.manual_seed(0)
lstm, proj = nn.LSTM(1, 8, batch_first=True), nn.Linear(8, 1)
optimizer = torch.optim.Adam([*lstm.parameters(), *proj.parameters()], lr=1e-2)


def training_step(window, hiddens):    # the user's LightningModule.training_step
    out, hiddens = lstm(window[:, :-1], hiddens)
    return F.mse_loss(proj(out), window[:, 1:]), hiddens


def detach_hiddens(hiddens):           # the trainer's helper between windows
    return hiddens.detach() if isinstance(hiddens, torch.Tensor) else hiddens  # BUG
    # FIX: return hiddens.detach() if isinstance(hiddens, torch.Tensor) else tuple(h.detach() for h in hiddens)


series = torch.sin(torch.linspace(0, 6, 25)).repeat(4, 1)[..., None] + 0.1 * torch.randn(4, 25, 1)
hiddens = None
for start in range(0, 24, 6):          # truncated_bptt_steps = 6
    loss, hiddens = training_step(series[:, start:start + 7], hiddens)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    hiddens = detach_hiddens(hiddens)
