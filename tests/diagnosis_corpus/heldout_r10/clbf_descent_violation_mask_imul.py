"""Learning a control Lyapunov function V and a controller u for an inverted pendulum: the descent
loss penalizes states where Vdot + lambda V <= 0 fails (Vdot from V's Lie derivatives along f, g).

Rewritten from MIT-REALM/neural_clbf#11 ("Strange Inplace Error Occurs Before Beginning First
Epoch"): the inverted-pendulum example failed in `descent_loss` with "...modified by an inplace
operation". The maintainer first doubted it ("AFAIK the `+=`, `*=`, etc. operators aren't in-place
operations", PR #10), then merged the reporter's PR #12, "Fixing Inplace Error that Made Weird
Autograd Errors", which writes those augmented assignments out of place ("it works").
`violation *= condition_active` writes into the output relu saved.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "MIT-REALM/neural_clbf#11"
CATEGORY = "inplace"
CULPRIT = "violation"
CAUSE = "the descent violation is masked with *= after relu saved it"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The descent loss trains the Lyapunov network V and the controller network u together; "
          "the pendulum dynamics and the sampled states are fixed.")
GRADS = ["V_nn.parameters()", "u_nn.parameters()"]


def control_affine_dynamics(x, m=1.0, L=1.0, b=0.01, g=9.81):   # state: angle, angular velocity
    f = torch.stack([x[:, 1], g / L * torch.sin(x[:, 0]) - b / (m * L**2) * x[:, 1]], dim=1)
    return f.unsqueeze(-1), torch.tensor([[0.0], [1 / (m * L**2)]]).expand(x.shape[0], 2, 1)


def V_with_jacobian(x):
    xr = x.clone().requires_grad_(True)   # the repository builds JV layer by layer; autograd here
    V = 0.5 * (V_nn(xr) ** 2).sum(dim=1)
    JV = torch.autograd.grad(V.sum(), xr, create_graph=True)[0]
    return V, JV.unsqueeze(1)


torch.manual_seed(0)
V_nn = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 16))
u_nn = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(list(V_nn.parameters()) + list(u_nn.parameters()), lr=1e-3)
clf_lambda, eps = 1.0, 0.1
for step in range(2):
    x = (torch.rand(64, 2) - 0.5) * 4
    goal_mask = x.norm(dim=1) < 0.3
    condition_active = (~goal_mask).float()
    V, JV = V_with_jacobian(x)
    f, g = control_affine_dynamics(x)
    Lf_V, Lg_V = torch.bmm(JV, f).squeeze(1), torch.bmm(JV, g).squeeze(1)
    u = u_nn(x)
    Vdot = (Lf_V + (Lg_V * u).sum(dim=1, keepdim=True)).reshape(V.shape)
    violation = F.relu(eps + Vdot + clf_lambda * V)
    violation *= condition_active  # BUG
    # FIX: violation = violation * condition_active
    descent_loss = violation.mean() + 10 * V[goal_mask].pow(2).sum()
    optimizer.zero_grad()
    descent_loss.backward()
    optimizer.step()
