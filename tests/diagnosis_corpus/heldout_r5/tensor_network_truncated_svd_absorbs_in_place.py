"""A two-core tensor-network (matrix-product) regressor trained with a DMRG-style split: each step
contracts the two cores, splits the result back with a truncated SVD to the maximum bond
dimension, absorbing the singular values into the left factor, and fits the targets with the split
factors.

Rewritten from jcmgray/symmray#2 ("change in-place operation x*=y to x = x*y in truncated-SVD",
merged; "Looks good, thanks!"): the library's truncated SVD absorbed the singular values with an
in-place `x *= y`, changed "so that torch can do backpropagation, as in torch during
backpropagation in-place operation is not allowed". The SVD's backward needs its outputs U, S and
Vh, and the truncated U is a view of the saved U that the in-place product rewrites.
"""
import torch
import torch.nn.functional as F

SOURCE = "jcmgray/symmray#2"
CATEGORY = "inplace"
CULPRIT = "left"
CAUSE = "the truncated SVD scales its saved U by the singular values in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The regression loss trains both tensor-network cores A and B, through the truncated "
          "SVD that re-splits their contraction.")
GRADS = ["A", "B"]


def svd_truncated(x, max_bond):   # the library's split with absorb="left", reduced
    U, s, VH = torch.linalg.svd(x, full_matrices=False)
    U, s, VH = U[:, :max_bond], s[:max_bond], VH[:max_bond]
    U *= s.reshape(1, -1)  # BUG
    # FIX: U = U * s.reshape(1, -1)
    return U, VH


torch.manual_seed(0)
features, targets = torch.randn(16, 5), torch.randn(16, 4)
A = torch.randn(5, 6, requires_grad=True)
B = torch.randn(6, 4, requires_grad=True)
optimizer = torch.optim.SGD([A, B], lr=1e-3)
for step in range(2):
    left, right = svd_truncated(A @ B, max_bond=3)
    loss = F.mse_loss(features @ left @ right, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
