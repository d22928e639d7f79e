"""Variational Monte Carlo for a small molecule: an orbital times a Pade-Jastrow factor
J = prod_{i<j} exp(w0 r_ij / (1 + w r_ij)); the energy trains the weight w and the orbital exponent.

Rewritten from NLESC-JCER/QMCTorch#30 ("Backpropagation error, gradient computation has been
modified by inplace operation"): optimizing molecules other than H2 failed with "one of the
variables needed for gradient computation has been modified by an inplace operation". The
maintainer's fix, PR #33 "fix inplace ops", says "the jastrow had a bunch of inplace operation that
prevented the automatic calculation of the energy gradient"; the fixed Jastrow copies the pair
matrix (`mat_cpy = mat.clone()`) before its pair helpers' index assignments. Here the pair-product
helper writes ones into the matrix it is given, torch.exp's output, which exp saved for backward.
"""
import torch
import torch.nn as nn

SOURCE = "NLESC-JCER/QMCTorch#30"
CATEGORY = "inplace"
CULPRIT = "jast"
CAUSE = "the pair-product helper writes ones into exp's saved output by index assignment"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The variational energy trains the Jastrow weight and the orbital exponent together; "
          "the electron positions are fixed samples.")
GRADS = ["jastrow.weight", "alpha"]

nelec, nbatch = 4, 32
lower = torch.tril(torch.ones(nelec, nelec)) == 1      # diagonal and lower triangle: not unique pairs


def prod_unique_pairs(mat):
    mat[..., lower] = 1  # BUG
    # FIX: mat = mat.clone(); mat[..., lower] = 1
    return mat.flatten(-2).prod(-1)


class PadeJastrow(nn.Module):
    def __init__(self, nup, ndown, w=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([w]))
        spin = torch.cat((torch.zeros(nup), torch.ones(ndown)))
        self.static_weight = torch.where(spin[:, None] == spin[None], 0.25, 0.5)   # w0: same / other spin

    def forward(self, r):
        jast = torch.exp(self.static_weight * r / (1.0 + self.weight * r))
        return prod_unique_pairs(jast), jast


torch.manual_seed(0)
jastrow = PadeJastrow(2, 2)
alpha = torch.tensor(1.2, requires_grad=True)              # orbital exponent
nuclei = torch.tensor([[0.0, 0.0, -0.7], [0.0, 0.0, 0.7]])
pos = torch.randn(nbatch, nelec, 3)                        # sampled electron positions
ree = (pos[:, :, None] - pos[:, None]).norm(dim=-1) + torch.eye(nelec)   # eye: no zero distances
ren = (pos[:, :, None] - nuclei).norm(dim=-1)
v_local = torch.triu(1 / ree, diagonal=1).sum((1, 2)) - (1 / ren).sum((1, 2))   # potential part only
J, jast = jastrow(ree)
psi = J * torch.exp(-alpha * ren.min(-1).values.sum(-1))
weights = psi**2 / (psi**2).sum()
energy = (weights * v_local).sum() + 0.5 * alpha**2
energy.backward()
