"""Learned image compression with a conditional diffusion decoder (CDC): the denoiser's residual
blocks add a projection of the diffusion-time embedding to their first block's output.

Rewritten from buggyyang/CDC_compression#1 ("... modified by an inplace operation?"): "It seems
that the diffusion model modifies the tensor with inplace operations". The reporter: "There are some inplace
operations in /modules/network_components.py. You should replace "h += x" with "h = h + x"."
The maintainer: "yes. new pytorch version may raise this error", and commit 538f0f4 "fix inplace
operation" writes `h = h + self.mlp(time_emb)[...]`: `h` is the output of a ReLU, which saved it.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "buggyyang/CDC_compression#1"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the residual block adds the time embedding in place to its ReLU's saved output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The noise-prediction loss trains the whole denoiser, the convolution blocks and the time "
          "embedding's projection alike.")
GRADS = "denoiser.parameters()"


class ResnetBlock(nn.Module):
    def __init__(self, dim, dim_out, time_emb_dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.LeakyReLU(0.2), nn.Linear(time_emb_dim, dim_out))
        self.block1 = nn.Sequential(nn.Conv2d(dim, dim_out, 3, padding=1), nn.GroupNorm(1, dim_out), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(dim_out, dim_out, 3, padding=1), nn.GroupNorm(1, dim_out), nn.ReLU())
        self.res_conv = nn.Conv2d(dim, dim_out, 1)

    def forward(self, x, time_emb):
        h = self.block1(x)
        h += self.mlp(time_emb)[:, :, None, None]  # BUG
        # FIX: h = h + self.mlp(time_emb)[:, :, None, None]
        return self.block2(h) + self.res_conv(x)


def time_embedding(t, dim=8):                     # SinusoidalPosEmb
    freqs = torch.exp(torch.arange(dim // 2) * -(math.log(10000) / (dim // 2 - 1)))
    return torch.cat([(t[:, None] * freqs).sin(), (t[:, None] * freqs).cos()], -1)


torch.manual_seed(0)
denoiser = nn.ModuleList([ResnetBlock(3 + 4, 8, 8), ResnetBlock(8, 3, 8)])
optimizer = torch.optim.Adam(denoiser.parameters(), lr=1e-4)
for step in range(2):
    x0, latent_cond, t = torch.rand(2, 3, 8, 8), torch.randn(2, 4, 8, 8), torch.randint(1, 100, (2,)).float()
    noise, alpha = torch.randn_like(x0), torch.cos(t / 100 * math.pi / 2)[:, None, None, None]
    h = torch.cat([alpha * x0 + (1 - alpha ** 2).sqrt() * noise, latent_cond], 1)
    for block in denoiser:
        h = block(h, time_embedding(t))
    loss = F.mse_loss(h, noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
