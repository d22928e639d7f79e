"""A segmentation head with InPlaceABN (a batch norm that overwrites its input and keeps only its
output for backward) followed by a stand-alone nn.ReLU(inplace=True).

Rewritten from mapillary/inplace_abn#6 ("RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"): the user replaced BatchNorm by
`InPlaceABNSync(planes, activation="none")` and kept `self.relu = nn.ReLU(inplace=True)` after it.
The maintainer: "you cannot have two subsequent inplace operations in your computation graph.
E.g., if you use InPlaceABN, the preceding and subsequent layer should not be inplace." InPlaceABN
rebuilds its normalized input from its saved output, which the in-place ReLU overwrites.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "mapillary/inplace_abn#6"
CATEGORY = "inplace"
CULPRIT = "y"
CAUSE = "an in-place ReLU overwrites the output InPlaceABN saved to invert in backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The pixel-wise cross-entropy trains the convolutions, the InPlaceABN scale and shift "
          "and the classifier; nothing else is trained.")
GRADS = ["conv.parameters()", "abn_weight", "abn_bias", "classifier.parameters()"]


class InPlaceABN(torch.autograd.Function):
    """y = weight * (x - mean) / std + bias, written into x; backward rebuilds x_hat from y."""
    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        mean, inv_std = x.mean((0, 2, 3)), (x.var((0, 2, 3), unbiased=False) + eps).rsqrt()
        x.sub_(mean[:, None, None]).mul_((inv_std * weight)[:, None, None]).add_(bias[:, None, None])
        ctx.mark_dirty(x)
        ctx.save_for_backward(x, weight, bias, inv_std)
        return x

    @staticmethod
    def backward(ctx, dy):
        y, weight, bias, inv_std = ctx.saved_tensors
        x_hat = (y - bias[:, None, None]) / weight[:, None, None]
        dweight, dbias, dx_hat = (dy * x_hat).sum((0, 2, 3)), dy.sum((0, 2, 3)), dy * weight[:, None, None]
        dx = inv_std[:, None, None] * (dx_hat - dx_hat.mean((0, 2, 3), keepdim=True)
                                       - x_hat * (dx_hat * x_hat).mean((0, 2, 3), keepdim=True))
        return dx, dweight, dbias, None


torch.manual_seed(0)
conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
abn_weight, abn_bias = nn.Parameter(torch.ones(8)), nn.Parameter(torch.zeros(8))
relu = nn.ReLU(inplace=True)  # BUG
# FIX: relu = nn.ReLU()
classifier = nn.Conv2d(8, 4, 1)
optimizer = torch.optim.SGD([*conv.parameters(), abn_weight, abn_bias, *classifier.parameters()], lr=0.1)
for step in range(2):
    images, masks = torch.randn(2, 3, 8, 8), torch.randint(0, 4, (2, 8, 8))
    y = InPlaceABN.apply(conv(images), abn_weight, abn_bias)
    loss = F.cross_entropy(classifier(relu(y)), masks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
