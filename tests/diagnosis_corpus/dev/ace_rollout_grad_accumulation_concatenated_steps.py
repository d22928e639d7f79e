"""An autoregressive climate emulator (ACE-style) trained on multi-step rollouts with gradient
accumulation: each forecast step's loss is backpropagated as soon as it is computed, so that only one
step's graph is held at a time, and the optimizer steps once per rollout.

Rewritten from ai2cm/ace#544 ("Gradient accumulation incompatible with current order of operations"),
opened by a maintainer: "`loss.backward()` can only be called multiple times to accumulate gradients
if it actually doesn't change the result ... it will not detach gradients between steps. Instead, it
raises an exception saying part of the graph the loss depends on has been discarded. If we
explicitly detach the tensors, we can apply gradient accumulation. ... However, if we take these
detached steps and concatenate them into a single tensor, all steps now depend on all steps even if we
slice that resulting tensor in time later", with the proposal to return "a type that stores steps as a
list of separate tensors". Both carriers need their fix: the state fed to the next step, and the
time-concatenated prediction the per-step losses are sliced from.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "ai2cm/ace#544"
CATEGORY = "carried-state"
CULPRIT = ["state", "prediction"]
CAUSE = "each step's loss reaches every step's graph, through the state and through the concatenation"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each forecast step's loss trains the step network through that step alone; the state "
          "carried from earlier steps is a constant input.")
GRADS = "module.parameters()"

torch.manual_seed(0)
n_vars, n_forcing, n_steps = 6, 2, 3
module = nn.Sequential(nn.Linear(n_vars + n_forcing, 16), nn.Tanh(), nn.Linear(16, n_vars))
optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
for batch in range(2):
    state = torch.randn(4, n_vars)                                  # the initial condition
    forcing, target = torch.randn(4, n_steps, n_forcing), torch.randn(4, n_steps, n_vars)
    optimizer.zero_grad()
    steps = []
    for t in range(n_steps):
        out = module(torch.cat([state, forcing[:, t]], dim=-1))
        steps.append(out)
        state = out  # BUG
        # FIX: state = out.detach()
    prediction = torch.stack(steps, dim=1)          # BatchData keeps the steps as one time dimension
    for t in range(n_steps):
        loss = F.mse_loss(prediction[:, t], target[:, t]) / n_steps  # BUG
        # FIX: loss = F.mse_loss(steps[t], target[:, t]) / n_steps
        loss.backward()
    optimizer.step()
