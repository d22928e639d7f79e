"""Forecasting neural activity with a two-layer recurrent model (a Wilson-Cowan-like hidden layer
feeding a readout layer), trained by truncated backpropagation through time: every
`backward_time_steps` steps the window's forecast loss is backwarded, the window's outputs are
detached, and the optimizer steps once at the end of the series.

Rewritten from NeuroTorch/NeuroTorch#134 ("TBPTT - Error using multiple layers": "The following error
is raised when using multiple layers and TBPTT in a SequentialRNN model. RuntimeError: Trying to
backward through the graph a second time"), fixed by the maintainer in NeuroTorch/NeuroTorch#137
("Detach hidden states automatically after call"). The TBPTT callback wrapped the forward of the
output layers only: after each window's backward it detached the output layer's output and state,
while the hidden layer's state went on into the next window with the freed window's graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "NeuroTorch/NeuroTorch#134"
CATEGORY = "carried-state"
CULPRIT = "hidden_state"
CAUSE = "TBPTT detaches the output layer's state but not the hidden layer's"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each window's forecast loss trains both recurrent layers through that window's time steps only; "
          "the states carried in from the previous window are starting values.")
GRADS = ["hidden_layer.parameters()", "readout.parameters()"]


class WilsonCowanLayer(nn.Module):
    def __init__(self, n_in, n_units, dt=0.2):
        super().__init__()
        self.inp, self.rec, self.dt = nn.Linear(n_in, n_units), nn.Linear(n_units, n_units, bias=False), dt

    def forward(self, x, state):
        return state + self.dt * (-state + torch.tanh(self.inp(x) + self.rec(state)))


torch.manual_seed(0)
n_units, backward_time_steps = 6, 3
hidden_layer, readout = WilsonCowanLayer(2, n_units), WilsonCowanLayer(n_units, 2)
optimizer = torch.optim.Adam([*hidden_layer.parameters(), *readout.parameters()], lr=1e-2)
series = torch.sin(torch.linspace(0, 6, 10))[None, :, None].repeat(4, 1, 2) + 0.1 * torch.randn(4, 10, 2)
hidden_state, out_state, window = torch.zeros(4, n_units), torch.zeros(4, 2), []
optimizer.zero_grad()
for t in range(9):
    hidden_state = hidden_layer(series[:, t], hidden_state)
    out_state = readout(hidden_state, out_state)
    window.append(out_state)
    if len(window) == backward_time_steps:          # the TBPTT callback, wrapped around the readout
        F.mse_loss(torch.stack(window, 1), series[:, t - backward_time_steps + 2:t + 2]).backward()
        window, out_state = [], out_state.detach()
        hidden_state = hidden_state  # BUG
        # FIX: hidden_state = hidden_state.detach()
optimizer.step()
