"""Point-cloud segmentation with a KPConv layer (torch-points3d): each query point gathers its
neighbours' positions and features through a neighbour index, where -1 marks a "shadow"
neighbour that points at an extra far-away point.

Rewritten from torch-points3d/torch-points3d#552 ("KPConv Autograd Error: Computation has been
modified by an inplace operation"): "[torch.LongTensor [3, 25, 3]] is at version 2; expected
version 1 instead", with the points created with requires_grad=True. The library's `gather` first
writes the shadow index into its argument (`idx[idx == -1] = x.shape[0] - 1`) and returns
`x.gather(0, idx)`, which saves an expanded view of that index; the second `gather` call, for the
features, writes into the same index tensor again. The fix in the thread: "changing L31 from
`return x.gather(0, idx)` to `return x.gather(0, idx.clone())`"; the issue was then closed.
"""
import torch
import torch.nn.functional as F

SOURCE = "torch-points3d/torch-points3d#552"
CATEGORY = "inplace"
CULPRIT = "neighbors_indices"
CAUSE = "the second gather rewrites the neighbour index the first gather saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The segmentation loss trains the kernel weights and, as in the report, also sends gradients "
          "to the point positions pos, which were created with requires_grad=True.")
GRADS = ["kernel_weights", "pos"]


def gather(x, idx):                # torch_points3d.core.common_modules.gathering.gather
    idx[idx == -1] = x.shape[0] - 1                        # shadow neighbour -> last row
    for i, ni in enumerate(idx.size()[1:]):
        x = x.unsqueeze(i + 1)
        x = x.expand(*x.shape[:i + 1], ni, *x.shape[i + 2:])
    n = idx.dim()
    for i, di in enumerate(x.size()[n:]):
        idx = idx.unsqueeze(i + n)
        idx = idx.expand(*idx.shape[:i + n], di)
    return x.gather(0, idx)  # BUG
    # FIX: return x.gather(0, idx.clone())


torch.manual_seed(0)
n_points, n_neighbors, n_kernel, c_in, n_classes = 3, 25, 4, 5, 2
pos = torch.rand(n_points, 3, requires_grad=True)
feats = torch.randn(n_points, c_in)
kernel_points = torch.randn(n_kernel, 3) * 0.3
kernel_weights = torch.randn(n_kernel, c_in, n_classes, requires_grad=True)
neighbors_indices = torch.randint(-1, n_points, (n_points, n_neighbors))
labels = torch.randint(0, n_classes, (n_points,))

s_pts = torch.cat([pos, torch.zeros_like(pos[:1]) + 1e6], 0)      # shadow point far away
neighbors = gather(s_pts, neighbors_indices) - pos.unsqueeze(1)   # [n, k, 3]
sq_dist = ((neighbors.unsqueeze(2) - kernel_points) ** 2).sum(-1)  # [n, k, K]
weights = torch.clamp(1 - sq_dist.sqrt() / 0.5, min=0).transpose(1, 2)
x = torch.cat([feats, torch.zeros_like(feats[:1])], 0)
neighb_x = gather(x, neighbors_indices)                            # [n, k, C]
out = torch.einsum("nkc,kcd->nd", weights @ neighb_x, kernel_weights)
loss = F.cross_entropy(out, labels)
loss.backward()
