"""Relaxing a molecule toward a stationary point with a trained SchNet-style potential in eval mode
(its dropout off): the objective E + 0.5 |F|^2 of the atomic positions needs the energy and the
forces F = -dE/dR, both still differentiable.

Rewritten from atomistic-machine-learning/schnetpack#279 ("Make create_graph disabling
optional"): the output module computed the forces with `create_graph = self.create_graph if
self.training else False`, "problematic when using custom layers (like dropout) that needs a
model.eval() but for which I still want to be able to use autograd". The maintainer's answer (#280):
"If you also want to create the graph in eval mode, just set `create_graph=True` in the
`__init__`" ("This is a perfect solution!"). Without it, autograd.grad frees the energy's graph.
"""
import torch
import torch.nn as nn

SOURCE = "atomistic-machine-learning/schnetpack#279"
CATEGORY = "higher-order"
CULPRIT = "results['energy']"
CAUSE = "in eval mode the forces' autograd.grad frees the energy graph"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The objective trains only the atomic positions, through both the energy and the forces; "
          "the potential's weights stay fixed.")
GRADS = "positions"


class Atomwise(nn.Module):
    def __init__(self, n_in, derivative="forces", create_graph=False):
        super().__init__()
        self.out_net = nn.Sequential(nn.Linear(n_in, n_in), nn.Dropout(0.1), nn.Tanh(), nn.Linear(n_in, 1))
        self.derivative, self.create_graph = derivative, create_graph

    def forward(self, h, positions):
        energy = self.out_net(h).sum()
        create_graph = True if self.training else self.create_graph
        dEdR = torch.autograd.grad(energy, positions, create_graph=create_graph)[0]
        return {"energy": energy, self.derivative: -dEdR}


class SchNetLike(nn.Module):
    def __init__(self, n_atom_basis=16, output=None):
        super().__init__()
        self.embedding, self.filter, self.output = nn.Embedding(10, n_atom_basis), nn.Linear(8, n_atom_basis), output
    def forward(self, Z, positions):
        d = ((positions[:, None] - positions[None]) ** 2).sum(-1).add(1e-6).sqrt()   # smooth at i == j
        rbf = torch.exp(-(d[..., None] - torch.linspace(0, 4, 8)) ** 2)        # edge filters from distances
        h = self.embedding(Z)
        h = h + (self.filter(rbf) * h[None]).sum(1)                            # one continuous-filter interaction
        return self.output(h, positions)


torch.manual_seed(0)
output = Atomwise(16)  # BUG
# FIX: output = Atomwise(16, create_graph=True)
model = SchNetLike(output=output).eval()
Z = torch.tensor([8, 1, 1, 6])
positions = torch.randn(4, 3, requires_grad=True)
results = model(Z, positions)
objective = results["energy"] + 0.5 * (results["forces"] ** 2).sum()
objective.backward()
