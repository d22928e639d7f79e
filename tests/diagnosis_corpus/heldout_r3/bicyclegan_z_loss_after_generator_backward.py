"""BicycleGAN: the encoder E maps a target image to a latent code, the generator G maps an input
image and a code to an output; one step backwards the E+G loss (GAN terms, L1, KL), then, with E
frozen, the latent regression loss |E(G(A, z_random)) - z_random| that trains G alone.

Rewritten from junyanz/BicycleGAN#81 ("Why we use 'retain_graph' when backwarding loss_G?"): the
maintainer answered that without it the code "might break in `backward_G_alone`" when lambda_z > 0.
loss_G's backward runs through G's output for the random code (its second GAN term), and the
latent loss then needs that same part of the graph; the repository keeps `retain_graph=True`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "junyanz/BicycleGAN#81"
CATEGORY = "two-backwards"
CULPRIT = "fake_B_random"
CAUSE = "the E+G loss's backward frees the generator graph the latent loss needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The E+G loss trains the encoder and the generator; the latent regression loss trains the "
          "generator only (the encoder is frozen for it); the discriminators are not trained here.")
GRADS = ["netE.parameters()", "netG.parameters()"]

def set_requires_grad(nets, flag):
    for net in nets:
        for p in net.parameters():
            p.requires_grad_(flag)

torch.manual_seed(0)
netG, netE = nn.Sequential(nn.Linear(10 + 2, 32), nn.ReLU(), nn.Linear(32, 10)), nn.Linear(10, 4)
netD, netD2 = nn.Linear(10, 1), nn.Linear(10, 1)
optimizer_G, optimizer_E = torch.optim.Adam(netG.parameters(), lr=2e-4), torch.optim.Adam(netE.parameters(), lr=2e-4)
for it in range(2):
    real_A, real_B = torch.randn(4, 10), torch.randn(4, 10)
    mu, logvar = netE(real_B).chunk(2, 1)                       # forward()
    z_encoded = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    z_random = torch.randn(4, 2)
    fake_B_encoded = netG(torch.cat([real_A, z_encoded], 1))
    fake_B_random = netG(torch.cat([real_A, z_random], 1))
    mu2, _ = netE(fake_B_random).chunk(2, 1)
    set_requires_grad([netD, netD2], False)                     # update_G_and_E()
    optimizer_E.zero_grad()
    optimizer_G.zero_grad()
    loss_G_GAN = F.mse_loss(netD(fake_B_encoded), torch.ones(4, 1))
    loss_G_GAN2 = F.mse_loss(netD2(fake_B_random), torch.ones(4, 1))
    loss_kl = torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) * (-0.5 * 0.01)
    loss_G = loss_G_GAN + loss_G_GAN2 + 10 * F.l1_loss(fake_B_encoded, real_B) + loss_kl
    loss_G.backward()  # BUG
    # FIX: loss_G.backward(retain_graph=True)
    set_requires_grad([netE], False)                            # backward_G_alone()
    loss_z_L1 = torch.mean(torch.abs(mu2 - z_random)) * 0.5
    loss_z_L1.backward()
    set_requires_grad([netE], True)
    optimizer_E.step()
    optimizer_G.step()
