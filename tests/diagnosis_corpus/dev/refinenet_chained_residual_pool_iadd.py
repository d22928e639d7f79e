"""RefineNet's chained residual pooling (CRP): after a ReLU, a chain of pool + conv blocks runs on the activation and each
block's output is added back to it; the refined map goes to a segmentation head.
Rewritten from thomasjpfan/pytorch_refinenet#2 ("one of the variables needed for gradient computation has been modified by
an inplace operation"): "When I run your model, there will be this error, is there any solution?". The maintainer: "Thank
you for reporting the bug. I have just fixed it", in commit "BUG: Fixes RuntimeError", which changes
`ChainedResidualPool.forward`'s `x += path` to `x = x + path`. The ReLU (inplace=True) saved its output x for backward,
and so did the first block's max-pool; the chained `+=` writes into it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "thomasjpfan/pytorch_refinenet#2"
CATEGORY = "inplace"
CULPRIT = "x"
CAUSE = "the CRP sum += writes into the ReLU output saved by the ReLU and max-pool"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The segmentation loss trains the adapter conv, the three CRP blocks and the head; each block refines the map."
GRADS = ["adapter.parameters()", "crp_blocks.parameters()", "head.parameters()"]

torch.manual_seed(0)
adapter = nn.Conv2d(8, 16, 3, padding=1)  # the backbone features' adaptation conv
relu = nn.ReLU(inplace=True)
crp_blocks = nn.ModuleList([nn.Sequential(nn.MaxPool2d(5, stride=1, padding=2), nn.Conv2d(16, 16, 3, padding=1, bias=False))
                            for _ in range(3)])
head = nn.Conv2d(16, 2, 1)
optimizer = torch.optim.SGD([*adapter.parameters(), *crp_blocks.parameters(), *head.parameters()], lr=0.01)
for it in range(2):
    features, target = torch.randn(2, 8, 8, 8), torch.randint(0, 2, (2, 8, 8))
    x = relu(adapter(features))
    path = x
    for block in crp_blocks:
        path = block(path)
        x += path  # BUG
        # FIX: x = x + path
    loss = F.cross_entropy(head(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
