"""Notebook 07's 1-D GAN: the D step uses D(fake) without detach, then the G step needs G's graph.

The course's own example (notebooks/07_patterns_from_practice.ipynb, section 1), built on
pytorch/examples#584 ("in DCGAN example, Why do we need to make netD inference twice?"): the D
step's backward frees G's part of the graph; the DCGAN example's `netD(fake.detach())` keeps it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/examples#584"
CATEGORY = "course"
CULPRIT = "fake"
CAUSE = "D's backward went through G and freed it"
FIX_KIND = "detach-input"
ERROR = "second time"


def bce(logits, target):
    return F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, float(target)))


torch.manual_seed(0)
G = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
D = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_G = torch.optim.Adam(G.parameters(), lr=1e-2, betas=(0.5, 0.999))
opt_D = torch.optim.Adam(D.parameters(), lr=1e-2, betas=(0.5, 0.999))
for step in range(3):
    fake = G(torch.randn(64, 1))
    d_loss = bce(D(3 + 0.5 * torch.randn(64, 1)), 1) + bce(D(fake), 0)  # BUG
    # FIX: d_loss = bce(D(3 + 0.5 * torch.randn(64, 1)), 1) + bce(D(fake.detach()), 0)
    opt_D.zero_grad()
    d_loss.backward()
    opt_D.step()
    g_loss = bce(D(fake), 1)
    opt_G.zero_grad()
    g_loss.backward()
    opt_G.step()
