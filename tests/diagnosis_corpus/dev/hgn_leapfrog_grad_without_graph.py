"""A Hamiltonian generative network's integrator: a network gives the energy H(q, p); each leapfrog
step moves q by dH/dp and p by -dH/dq, both taken with torch.autograd.grad of the same energy, and
the rollout's reconstruction loss trains the Hamiltonian network through every step.

Rewritten from CampusAI/Hamiltonian-Generative-Networks#23 ("Should the integrator retain graph?"):
a maintainer proposed to test whether the integrator's gradient calls need to keep the graph ("Extra
memory is used"); the other maintainer answered "How can you backpropagate through the integration if
the graph is not retained?", and the integrator keeps `create_graph=True, retain_graph=True` on its
autograd.grad calls. Without them the second derivative of the same energy finds the buffers the
first one freed; with `retain_graph=True` alone it runs, but dH/dp carries no graph and the rollout
loss then gives the Hamiltonian network no gradient at all.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "CampusAI/Hamiltonian-Generative-Networks#23"
CATEGORY = "higher-order"
CULPRIT = "energy"
CAUSE = "the first autograd.grad of the energy frees the graph the second one needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The reconstruction loss of the rollout trains the Hamiltonian network through both of its "
          "derivatives at every leapfrog step.")
GRADS = ["hnn[0].weight", "hnn[0].bias", "hnn[2].weight"]

torch.manual_seed(0)
hnn = nn.Sequential(nn.Linear(2, 16), nn.Softplus(), nn.Linear(16, 1))


def get_grads(q, p):
    energy = hnn(torch.cat([q, p], -1)).sum()
    dq_dt = torch.autograd.grad(energy, p)[0]  # BUG
    # FIX: dq_dt = torch.autograd.grad(energy, p, create_graph=True, retain_graph=True)[0]
    dp_dt = -torch.autograd.grad(energy, q, create_graph=True, retain_graph=True)[0]
    return dq_dt, dp_dt


def leapfrog(q, p, dt=0.1):
    _, dp_dt = get_grads(q, p)
    p_half = p + 0.5 * dt * dp_dt
    dq_dt, _ = get_grads(q, p_half)
    q_next = q + dt * dq_dt
    _, dp_dt = get_grads(q_next, p_half)
    return q_next, p_half + 0.5 * dt * dp_dt


t = torch.arange(1, 6) * 0.1                     # observed positions of a unit spring
q0, p0 = torch.rand(8, 1), torch.rand(8, 1)
observed = q0 * torch.cos(t) + p0 * torch.sin(t)
optimizer = torch.optim.Adam(hnn.parameters(), lr=1e-3)
q, p, rollout = q0.clone().requires_grad_(), p0.clone().requires_grad_(), []
for step in range(5):
    q, p = leapfrog(q, p)
    rollout.append(q)
loss = F.mse_loss(torch.cat(rollout, 1), observed)
optimizer.zero_grad()
loss.backward()
