"""A trainable Conv1d that converts the data to the network's input, applied once, before the loop.

Rewritten from lucidrains/denoising-diffusion-pytorch#109 ("RuntimeError: Trying to backward
through the graph a second time"): the first `loss.backward()` works, the second raises; the
reporter found the reason: "I use a conv1D() to convert my data to the shape of the network's
input, which is out of the training loop". The fix moves the conversion into the loop.
"""
import torch
import torch.nn as nn

SOURCE = "lucidrains/denoising-diffusion-pytorch#109"
CATEGORY = "computed-once"
CULPRIT = "data"
CAUSE = "the converted input was made once, with its graph, before the loop"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
raw = torch.randn(4, 3, 32)
to_input = nn.Conv1d(3, 8, kernel_size=1)
denoiser = nn.Sequential(nn.Conv1d(8, 16, 3, padding=1), nn.SiLU(), nn.Conv1d(16, 8, 3, padding=1))
opt = torch.optim.Adam(list(denoiser.parameters()) + list(to_input.parameters()), lr=1e-3)
data = to_input(raw)                 # the conversion, once, before the loop
for step in range(3):
    x = data  # BUG
    # FIX: x = to_input(raw)
    noise = torch.randn_like(x)
    t = torch.rand(4, 1, 1)
    loss = (denoiser(x * (1 - t) + noise * t) - noise).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
