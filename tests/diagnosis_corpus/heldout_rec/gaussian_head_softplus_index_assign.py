"""A heteroscedastic regression head: the net predicts a mean and a raw scale per row, and the
scale column is made positive with softplus by assigning it back into the same output tensor.

Rewritten from pytorch/pytorch#114505 ("An inplace operation involved in
torch.nn.functional.softplus"): `b[:, 1] = torch.nn.Softplus()(b[:, 0])` raises "one of the
variables needed for gradient computation has been modified by an inplace operation: [...], which
is output 0 of AsStridedBackward0", while `Softplus()(b[:, 0].clone())` works. soulitzer closed it
as expected: the index assignment writes into the tensor softplus saved, and autograd keeps one
version counter for the whole storage, "even if you in-place on a different region". The user's
own line writes in place, not the optimizer or a module.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/pytorch#114505"
CATEGORY = "inplace"
CULPRIT = "out"
CAUSE = "index assignment writes softplus's result into the tensor softplus saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The Gaussian negative log-likelihood trains the whole net, through both the mean and the scale."
GRADS = "net.parameters()"

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(32, 4)
    y = x[:, :1] + 0.3 * torch.randn(32, 1)
    out = net(x)
    out[:, 1] = F.softplus(out[:, 1]) + 1e-3  # BUG
    # FIX: out[:, 1] = F.softplus(out[:, 1].clone()) + 1e-3
    loss = F.gaussian_nll_loss(out[:, :1], y, out[:, 1:] ** 2)
    opt.zero_grad()
    loss.backward()
    opt.step()
