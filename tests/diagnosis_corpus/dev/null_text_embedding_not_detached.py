"""Null-text inversion: the text embedding is computed once, with its graph, then used by every
inner optimisation step of the unconditional embedding.

Rewritten from tejank10/null-text-inversion#1 ("I got RuntimeError: Trying to backward through
the graph a second time"): the maintainer answers "It could happen if some variable that's used
during training (like `text_embedding`) is not detached before the training starts". The fix
computes it without a graph (detached) before the loop.
"""
import torch
import torch.nn as nn

SOURCE = "tejank10/null-text-inversion#1"
CATEGORY = "computed-once"
CULPRIT = "text_embedding"
CAUSE = "text_embedding keeps the text encoder's graph, freed by the first inner backward"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
text_encoder = nn.Sequential(nn.Embedding(20, 8), nn.Linear(8, 8))
unet = nn.Linear(16, 8)
tokens = torch.tensor([[1, 5, 7]])
text_embedding = text_encoder(tokens).mean(1)  # BUG
# FIX: text_embedding = text_encoder(tokens).mean(1).detach()
uncond = torch.zeros(1, 8, requires_grad=True)
opt = torch.optim.Adam([uncond], lr=1e-2)
latent, target = torch.randn(1, 8), torch.randn(1, 8)
for inner in range(5):
    noise_uncond = unet(torch.cat([latent, uncond], 1))
    guided = noise_uncond + 7.5 * (unet(torch.cat([latent, text_embedding], 1)) - noise_uncond)
    loss = (guided - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
