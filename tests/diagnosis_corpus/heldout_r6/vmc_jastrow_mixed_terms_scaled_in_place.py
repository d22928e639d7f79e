"""Variational Monte Carlo with a two-body Pade-Jastrow factor J = exp(sum u(r_ij)), u(r) = w r / (1 + w r):
the kinetic energy uses J's analytic derivatives, and the mean local energy trains the weight w.

Rewritten from NLESC-JCER/QMCTorch#33 ("fix inplace ops", merged; "Should fix #30"): "the jastrow had
a bunch of inplace operation that prevented the automatic calculation of the energy gradient". In
fast_jastrow.py the mixed terms of the Laplacian (products of the derivatives of two pair factors that
share an electron) were scaled in place, `x = x.prod(-1); x *= self.weight_partial_der`; the fix
writes `x = x * self.weight_partial_der` (and likewise for `hess_jast *= 0.5`, `+=`). The product
saved its result for its backward; the in-place scaling overwrites it inside the library.
"""
import torch
import torch.nn as nn

SOURCE = "NLESC-JCER/QMCTorch#33"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the Jastrow's mixed terms are scaled in place after prod saved them"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The mean local energy over the walkers trains the Jastrow weight through the kinetic energy; "
          "the walker positions are fixed samples.")
GRADS = "jastrow.weight"


class TwoBodyJastrow(nn.Module):   # QMCTorch's fast Jastrow: analytic derivatives of the pair factors
    def __init__(self, nelec=3, w=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(w))
        self.index_row, self.index_col = torch.triu_indices(nelec, nelec, 1)   # pairs 01, 02, 12
        self.index_partial_der = torch.tensor([[0, 1], [0, 2], [1, 2]])          # pairs sharing electron 0, 1, 2
        self.weight_partial_der, self.index_partial_der_to_elec = torch.tensor([2.0, -2.0, 2.0]), torch.arange(3)

    def _partial_derivative(self, djast, out_mat):
        x = djast[..., self.index_partial_der].prod(-1)
        x *= self.weight_partial_der  # BUG
        # FIX: x = x * self.weight_partial_der
        return out_mat.index_add(1, self.index_partial_der_to_elec, x.sum(1))

    def laplacian_terms(self, pos):   # per electron: the Laplacian of sum u plus its squared gradient
        diff = pos[:, self.index_row] - pos[:, self.index_col]
        r, w = diff.norm(dim=-1), self.weight
        du, d2u = w / (1 + w * r) ** 2, -2 * w ** 2 / (1 + w * r) ** 3
        djast = (du[..., None] * diff / r[..., None]).transpose(1, 2)     # (walkers, xyz, pairs)
        per_pair = d2u + 2 * du / r + (djast ** 2).sum(1)
        out = torch.zeros(pos.shape[:2]).index_add(1, self.index_row, per_pair).index_add(1, self.index_col, per_pair)
        return self._partial_derivative(djast, out)


torch.manual_seed(0)
jastrow = TwoBodyJastrow()
optimizer = torch.optim.SGD(jastrow.parameters(), lr=1e-2)
for step in range(2):
    walkers = torch.randn(16, 3, 3)
    r_ee = (walkers[:, jastrow.index_row] - walkers[:, jastrow.index_col]).norm(dim=-1)   # nucleus Z=3 at 0
    potential = (1 / r_ee).sum(1) - (3 / walkers.norm(dim=-1)).sum(1)
    loss = (-0.5 * jastrow.laplacian_terms(walkers).sum(1) + potential).mean()   # mean local energy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
