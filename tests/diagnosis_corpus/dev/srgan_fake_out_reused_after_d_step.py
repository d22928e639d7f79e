"""SRGAN training: the discriminator is updated on real and super-resolved images, then the
generator's loss (adversarial term plus image and perception terms) uses the discriminator's
score of the super-resolved image.

Rewritten from leftthomas/SRGAN#79 ("RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"): with PyTorch 1.6 `g_loss.backward()`
fails. The poster asks: "can I move the `fake_img` and `fake_out` before calculating the
g_loss?", and the maintainer points to #57, where that is the answer; the repository's train.py
now recomputes `fake_img = netG(z)` and `fake_out = netD(fake_img).mean()` after
`optimizerD.step()`, whose in-place update changed the weights the old `fake_out` was computed with.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "leftthomas/SRGAN#79"
CATEGORY = "inplace"
CULPRIT = "netD[2].weight"
CAUSE = "the discriminator's step changes weights that the old fake_out still needs"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The discriminator loss trains the discriminator; the generator loss trains the generator, "
          "judged by the discriminator as it is after its step.")
GRADS = ["netG.parameters()", "netD.parameters()"]

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(8, 32), nn.PReLU(), nn.Linear(32, 32))
netD = nn.Sequential(nn.Linear(32, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
optimizerG, optimizerD = torch.optim.Adam(netG.parameters()), torch.optim.Adam(netD.parameters())
for step in range(2):
    z, real_img = torch.randn(4, 8), torch.randn(4, 32)     # low-resolution input, high-resolution target
    fake_img = netG(z)
    netD.zero_grad()
    real_out = netD(real_img).mean()
    fake_out = netD(fake_img).mean()
    d_loss = 1 - real_out + fake_out
    d_loss.backward(retain_graph=True)
    optimizerD.step()
    netG.zero_grad()
    g_loss = 0.001 * (1 - fake_out) + F.mse_loss(fake_img, real_img)  # BUG
    # FIX: fake_img = netG(z); fake_out = netD(fake_img).mean(); g_loss = 0.001 * (1 - fake_out) + F.mse_loss(fake_img, real_img)
    g_loss.backward()
    optimizerG.step()
