"""A GAN trained generator first: the generator's loss is backwarded and stepped, then the
discriminator's loss reuses the discriminator's output on the same fake batch.

Rewritten from the Stack Overflow question 'How does PyTorch's loss.backward() work when
"retain_graph=True" is specified?': `loss_g.backward(); optim_g.step(); loss_d.backward()` raised
"Trying to backward through the graph a second time", and `loss_g.backward(retain_graph=True)`
made it run. The accepted answer: the error shows that the discriminator's loss backpropagates
through the generator, which an adversarial setup must avoid; "by setting retain_graph=True you
wrongly hide this error". The discriminator's loss must use the fake batch detached. On today's
torch retaining no longer even hides it: loss_d's backward then reaches G's weights, changed by
`optim_g.step()`, and raises the in-place error (checked on torch 2.13).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = 'How does PyTorch\'s loss.backward() work when "retain_graph=True" is specified?'
CATEGORY = "two-backwards"
CULPRIT = "d_fake"
CAUSE = "the discriminator's loss reuses D's output on the fake batch, freed by G's backward"
FIX_KIND = "detach-input"
ERROR = "second time"
INTENT = ("The generator's loss_g trains only G and the discriminator's loss_d trains only D; "
          "loss_d must not reach the generator.")
GRADS = ["G.parameters()", "D.parameters()"]

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optim_g, optim_d = torch.optim.Adam(G.parameters(), lr=2e-4), torch.optim.Adam(D.parameters(), lr=2e-4)
ones, zeros, bce = torch.ones(16, 1), torch.zeros(16, 1), F.binary_cross_entropy_with_logits
for step in range(2):
    real = torch.randn(16, 8) + 2.0
    fake = G(torch.randn(16, 4))
    d_fake = D(fake)
    loss_g = bce(d_fake, ones)
    optim_g.zero_grad()
    loss_g.backward()
    optim_g.step()
    loss_d = bce(D(real), ones) + bce(d_fake, zeros)  # BUG
    # FIX: loss_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    optim_d.zero_grad()
    loss_d.backward()
    optim_d.step()
