"""A Glow flow step (1x1 invertible convolution, then an affine coupling): the coupling splits z
into two halves by slicing and updates the second half in place.

Rewritten from chaiyujin/glow-pytorch#6 ("Fixed un-computable gradients"), merged: "Replaced
in-place operations in coupling layers to resolve issues with gradients being unable to propagate
through in-place ops". `FlowStep.normal_flow` did `z2 += shift` and `z2 *= scale` on `z2`, a slice
of `z` whose other half `z1` the coupling net's first convolution saved: one version counter for
the whole of `z`. The fix writes `z2 = z2 + shift` and `z2 = z2 * scale`.
"""
import torch
import torch.nn as nn

SOURCE = "chaiyujin/glow-pytorch#6"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "+= on one half of z changes the half the coupling net saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The negative log-likelihood trains the flow step: its 1x1 convolution and its coupling net."
GRADS = "step.parameters()"


class FlowStep(nn.Module):
    def __init__(self, c=4, hidden=8):
        super().__init__()
        self.invconv = nn.Conv2d(c, c, 1, bias=False)
        nn.init.orthogonal_(self.invconv.weight)
        self.f = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, padding=1), nn.ReLU(), nn.Conv2d(hidden, c, 1))

    def forward(self, x):
        z = self.invconv(x)
        logdet = torch.slogdet(self.invconv.weight.squeeze())[1] * x.shape[2] * x.shape[3]
        z1, z2 = z[:, :z.shape[1] // 2], z[:, z.shape[1] // 2:]
        h = self.f(z1)
        shift, scale = h[:, 0::2], torch.sigmoid(h[:, 1::2] + 2.0)
        z2 += shift  # BUG
        # FIX: z2 = z2 + shift
        z2 *= scale  # BUG
        # FIX: z2 = z2 * scale
        logdet = logdet + scale.log().flatten(1).sum(1)
        return torch.cat([z1, z2], 1), logdet


torch.manual_seed(0)
step = FlowStep()
optimizer = torch.optim.Adam(step.parameters(), lr=1e-3)
for it in range(2):
    x = torch.rand(4, 4, 6, 6)
    z, logdet = step(x)
    nll = (0.5 * z.pow(2).flatten(1).sum(1) - logdet).mean()
    optimizer.zero_grad()
    nll.backward()
    optimizer.step()
