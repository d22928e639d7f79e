"""Long-range electrostatics for a machine-learned potential: a reduced PME/Ewald calculator
computes the reciprocal-space energy of point charges in a periodic cell, and each configuration's
energy is backpropagated to its positions and cell (forces and stress).

Rewritten from lab-cosmo/torch-pme#62 ("Caching destroys computational graph"): the calculator
cached the k-vectors and kernel that "only depend on `cell`" (`if not torch.allclose(cell,
self._cell_cache): ...`), so a second configuration in the same cell reused tensors built from the
first call's cell tensor: "if you reuse the calculator and compute the potential a second time
... You get a RuntimeError stating that Trying to backward through the graph a second time". The
maintainers' fix ("disable caching", e22297d) recomputes them on every call, leaving a TODO that
caching "may save up to 15% but issues with AD should be ... resolved".
"""
import math

import torch
import torch.nn as nn

SOURCE = "lab-cosmo/torch-pme#62"
CATEGORY = "carried-state"
CULPRIT = ["calculator._kvectors", "calculator._kernel"]
CAUSE = "k-vectors cached from the first call's cell tensor are reused for an equal cell"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("Each configuration's energy is differentiated with respect to its own positions and "
          "cell; nothing is trained, and no call may reuse another call's cell graph.")
GRADS = ["positions", "cell"]


class PMEPotential(nn.Module):   # torchpme.PMEPotential, September 2024, reduced to a k-space sum
    def __init__(self, smearing=1.0, n_max=2):
        super().__init__()
        self.smearing, r = smearing, torch.arange(-n_max, n_max + 1.0)
        n = torch.cartesian_prod(r, r, r)
        self.n = n[(n != 0).any(1)]
        self._cell_cache, self._kvectors, self._kernel = -torch.ones(3, 3), None, None

    def forward(self, positions, charges, cell):
        if not torch.allclose(cell, self._cell_cache):  # BUG
            # FIX: if True:
            self._cell_cache = cell.detach().clone()
            self._kvectors = 2 * math.pi * self.n @ torch.linalg.inv(cell).T
            k2 = (self._kvectors ** 2).sum(-1)
            self._kernel = 4 * math.pi * torch.exp(-0.5 * self.smearing ** 2 * k2) / k2
        phase = positions @ self._kvectors.T
        s2 = (charges[:, None] * torch.cos(phase)).sum(0) ** 2 + (charges[:, None] * torch.sin(phase)).sum(0) ** 2
        return 0.5 * (self._kernel * s2).sum() / torch.abs(cell.det())


torch.manual_seed(0)
calculator = PMEPotential()
charges = torch.tensor([1.0, -1.0, 1.0, -1.0])
for config in range(2):
    positions = (5 * torch.rand(4, 3)).requires_grad_()
    cell = (5 * torch.eye(3)).requires_grad_()
    energy = calculator(positions, charges, cell)
    energy.backward()
