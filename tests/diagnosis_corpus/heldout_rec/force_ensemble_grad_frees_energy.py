"""An adversarial attack on an ensemble of neural force fields: forces are -dE/dx by autograd.grad,
and the attack's loss uses both the forces and the energies.

Rewritten from learningmatter-mit/Atomistic-Adversarial-Attacks#1 ("Running through grah a second
time"): the user's model computes its forces inside with `torch.autograd.grad`, and the attack's
backward raises "Trying to backward through the graph a second time". The maintainer answered
that NFF computes forces passing the graph flags to `torch.autograd.grad` (its compute_grad passes
`create_graph=True, retain_graph=True`); without them the graph is freed by the grad call. The
user confirmed "That did it!". Detaching the energies instead would make the Boltzmann factor a
constant and stop it from steering the perturbation.
"""
import torch
import torch.nn as nn

SOURCE = "learningmatter-mit/Atomistic-Adversarial-Attacks#1"
CATEGORY = "higher-order"
CULPRIT = "energies"
CAUSE = "autograd.grad for the forces freed the energy graph the loss needs again"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The attack loss trains only the perturbation `delta`, through both the force "
          "uncertainty and the energies' Boltzmann factor; the ensemble's weights stay fixed.")
GRADS = ["delta"]

torch.manual_seed(0)
ensemble = [nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)) for _ in range(3)]
for model in ensemble:
    model.requires_grad_(False)
xyz = torch.randn(5, 3)
delta = torch.zeros(5, 3, requires_grad=True)
opt = torch.optim.Adam([delta], lr=1e-2)
kT = 0.5
for step in range(3):
    pos = xyz + delta
    energies = torch.stack([model(pos).sum() for model in ensemble])
    forces = []
    for e in energies:
        g = torch.autograd.grad(e, pos)[0]  # BUG
        # FIX: g = torch.autograd.grad(e, pos, create_graph=True, retain_graph=True)[0]
        forces.append(-g)
    force_var = torch.stack(forces).var(0).mean()
    boltzmann = torch.exp(-energies.mean() / kT)
    loss = -force_var * boltzmann
    opt.zero_grad()
    loss.backward()
    opt.step()
