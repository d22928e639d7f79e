"""A neural ODE trained through an adaptive-step solver in the style of torch_ACA: before each
accepted step a trial step without a graph picks the step size, and the solver then reloads the
ODE function's saved state (`load_state_dict`) to undo the trial's batch-norm statistics.
Rewritten from juntang-zhuang/torch_ACA#1 ("...modified by an inplace operation:
[torch.cuda.FloatTensor [512]] is at version 8; expected version 7"). The maintainer found "a
problem with using 'load_state_dict' within a function to be backwarded through" (it copies into
the parameters the accepted steps saved); his fix: "comment out all the 'load_state_dict'" in
the solvers, accepting that the running statistics then drift a little.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "juntang-zhuang/torch_ACA#1"
CATEGORY = "inplace"
CULPRIT = "func.norm.running_mean"   # the error's tensor (first labelled func.norm.weight)
CAUSE = "load_state_dict inside the solver rewrites parameters the accepted steps saved"
FIX_KIND = "no-data-write"
ERROR = "inplace"
INTENT = ("The trajectory loss trains the ODE function (its linear map and its batch norm's scale and "
          "shift) through every accepted solver step; the trial steps only choose the step size.")
GRADS = "func.parameters()"


class ODEFunc(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.fc, self.norm = nn.Linear(dim, dim), nn.BatchNorm1d(dim)

    def forward(self, t, y):
        return torch.tanh(self.norm(self.fc(y)))


def odesolve(func, y0, t1, h=0.5, tol=0.05):
    state0 = copy.deepcopy(func.state_dict())
    t, y = 0.0, y0
    while t < t1 - 1e-9:
        with torch.no_grad():                            # trial step: estimate the error, pick h
            k1 = func(t, y)
            err = (func(t + h, y + h * k1) - k1).abs().max().item() * h / 2
        h = min(h * 0.5 if err > tol else h, t1 - t)
        func.load_state_dict(state0)  # BUG
        # FIX: pass
        k1 = func(t, y)
        y, t = y + h / 2 * (k1 + func(t + h, y + h * k1)), t + h   # Heun step, with the graph
    return y


torch.manual_seed(0)
func = ODEFunc()
optimizer = torch.optim.Adam(func.parameters(), lr=1e-2)
for itr in range(2):
    y0, target = torch.randn(8, 6), torch.randn(8, 6)
    optimizer.zero_grad()
    loss = F.mse_loss(odesolve(func, y0, t1=1.0), target)
    loss.backward()
    optimizer.step()
