"""A critic with a hand-written spectral normalisation: each call runs one power-iteration step that
writes its two vectors in place (under no_grad, as torch's own does), then divides the weight by the
estimate. The critic is called on real and on generated samples before one backward: the second call
rewrote both vectors the first call's estimate saved. The writes are part of the loss's own forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The critic's loss on real and generated samples trains the critic's weight; the power-iteration "
          "vectors are estimates that no loss trains.")
GRADS = ["critic.weight"]
RULE = "inplace-write"
KIND = "no-data-write"


class SNLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) / n_in ** 0.5)
        self.register_buffer("left", F.normalize(torch.randn(n_out), dim=0))
        self.register_buffer("right", F.normalize(torch.randn(n_in), dim=0))

    def forward(self, x):
        left, right = self.left, self.right
        with torch.no_grad():
            F.normalize(self.weight.t() @ left, dim=0, out=right)
            F.normalize(self.weight @ right, dim=0, out=left)
        scale = left @ (self.weight @ right)  # BUG
        # FIX: scale = left.clone() @ (self.weight @ right.clone())
        return x @ (self.weight / scale).t()


torch.manual_seed(0)
critic = SNLinear(5, 1)
opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
for _step in range(2):
    real, fake = torch.randn(8, 5) + 1, torch.randn(8, 5)
    loss = critic(fake).mean() - critic(real).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
