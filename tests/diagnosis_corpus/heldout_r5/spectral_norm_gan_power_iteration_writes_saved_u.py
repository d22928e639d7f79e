"""A GAN critic with spectral normalization (the non-saturating loss): the critic scores a real batch and a
fake batch, two forwards, then one backward of the loss that combines both scores.

Rewritten from pytorch/pytorch#13350 ("Fix more spectral norm bugs"). #12671 had changed
`torch.nn.utils.spectral_norm` to update the power-iteration vectors u and v in place (for
DataParallel), "but then it breaks backward through two forwards (e.g., the common GAN loss
`D(real) - D(fake)`) because the vectors needed to backprop the 1st forward is changed in the 2nd
forward. Fix: This PR clones `u` and `v` before using them." The library's hook is reproduced in a
few lines (`SNLinear`); the write is the library's, under no_grad, into its own buffers, not the
user's code: the user only calls the critic twice.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/pytorch#13350"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the second forward's power iteration overwrites u and v the first forward saved"
FIX_KIND = "no-data-write"
ERROR = "inplace"
INTENT = ("The critic loss trains only the spectrally normalized critic, through both its real and "
          "its fake scores; the generator is fixed here.")
GRADS = "D.parameters()"


class SNLinear(nn.Linear):
    """nn.utils.spectral_norm after #12671: one power iteration per forward, u and v written in place."""
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out)
        self.register_buffer("weight_u", F.normalize(torch.randn(n_out), dim=0))
        self.register_buffer("weight_v", F.normalize(torch.randn(n_in), dim=0))

    def forward(self, x):
        u, v = self.weight_u, self.weight_v
        with torch.no_grad():
            F.normalize(self.weight.t() @ u, dim=0, out=v)
            F.normalize(self.weight @ v, dim=0, out=u)
        sigma = torch.dot(u, self.weight @ v)  # BUG
        # FIX: sigma = torch.dot(u.clone(), self.weight @ v.clone())
        return F.linear(x, self.weight / sigma, self.bias)


torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(SNLinear(8, 16), nn.LeakyReLU(0.2), SNLinear(16, 1))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.0, 0.9))
for step in range(2):
    real = torch.randn(16, 8) + 1.0
    with torch.no_grad():
        fake = G(torch.randn(16, 4))
    loss_d = F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean()
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
