"""A GAN whose discriminator sees real and generated samples in one batch, and whose generator's
loss reuses that batch's output: both losses are built on one graph, the generator's zero_grad runs
between their backwards. Summing or retaining would run, and train each network with the other's
loss: two optimizers own what the graph reaches, so which loss trains which network is the user's
call, and the right remedy (a second forward, the fake detached for the discriminator) has no
one-line edit."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "The discriminator's loss trains D only; the generator's loss trains G only, through D."
GRADS = ["G.parameters()", "D.parameters()"]
RULE = "shared-graph"
KIND = "detach-input"
BY_HAND = True
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g, opt_d = torch.optim.Adam(G.parameters(), 2e-4), torch.optim.Adam(D.parameters(), 2e-4)
for _ in range(2):
    real, z = torch.randn(16, 8), torch.randn(16, 4)
    out = D(torch.cat([real, G(z)]))  # BUG
    # FIX: fake = G(z); out = D(torch.cat([real, fake.detach()]))
    labels = torch.cat([torch.ones(16, 1), torch.zeros(16, 1)])
    d_loss = F.binary_cross_entropy_with_logits(out, labels)
    g_loss = F.binary_cross_entropy_with_logits(out[16:], torch.ones(16, 1))  # BUG
    # FIX: g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(16, 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_g.zero_grad()
    g_loss.backward()
    opt_d.step()
    opt_g.step()
