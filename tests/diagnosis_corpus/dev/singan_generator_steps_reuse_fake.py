"""SinGAN, one scale of the pyramid: a few discriminator steps (WGAN loss), then a few generator
steps on the adversarial loss and the reconstruction loss of the fixed noise z_opt.

Rewritten from tamarott/SinGAN#117 ("Fix for PyTorch 1.6"): since PyTorch 1.5 training fails with
the in-place error in the generator loop, which scores the `fake` made at the end of the
discriminator loop at every generator step. The PR's `netD(fake.detach())` ran, but reviewers
answered "if use fake.detach(), netG will not update anymore ... I think maybe we need to generate
a new fake to update netG": `fake = netG(noise.detach(), prev)` at the start of each generator step.
After the first optimizerG.step() the old fake's graph meets the generator's updated weights.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "tamarott/SinGAN#117"
CATEGORY = "inplace"
CULPRIT = "netG[2].weight"
CAUSE = "generator steps reuse one fake made before the generator's weights changed"
FIX_KIND = "recompute-in-step"
ERROR = "inplace"
INTENT = ("The discriminator loss trains only the discriminator; the adversarial and reconstruction "
          "losses train only the generator, each generator step through a fake from its current weights.")
GRADS = ["netG.parameters()", "netD.parameters()"]

def block(c_in, c_out):
    return [nn.Conv2d(c_in, c_out, 3, padding=1), nn.LeakyReLU(0.2)]

torch.manual_seed(0)
real = torch.randn(1, 3, 12, 12)
netG = nn.Sequential(*block(3, 8), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())
netD = nn.Sequential(*block(3, 8), nn.Conv2d(8, 1, 3, padding=1))
optimizerD = torch.optim.Adam(netD.parameters(), lr=5e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=5e-4, betas=(0.5, 0.999))
prev, z_opt, alpha = torch.zeros_like(real), torch.randn_like(real), 10
for epoch in range(2):
    for j in range(3):                          # Dsteps
        netD.zero_grad()
        errD_real = -netD(real).mean()
        errD_real.backward(retain_graph=True)
        noise = torch.randn_like(real)
        fake = netG(noise.detach() + prev)
        errD_fake = netD(fake.detach()).mean()
        errD_fake.backward(retain_graph=True)
        optimizerD.step()
    for j in range(3):                          # Gsteps
        netG.zero_grad()
        fake = fake  # BUG
        # FIX: fake = netG(noise.detach() + prev)
        errG = -netD(fake).mean()
        errG.backward(retain_graph=True)
        rec_loss = alpha * F.mse_loss(netG(z_opt.detach() + prev), real)
        rec_loss.backward(retain_graph=True)
        optimizerG.step()
