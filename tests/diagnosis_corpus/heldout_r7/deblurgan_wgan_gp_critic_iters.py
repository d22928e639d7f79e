"""DeblurGAN's conditional GAN with a WGAN-GP critic: the critic is updated several times per
generator update, each time on the same deblurred batch, and its loss adds a gradient penalty on
images interpolated between the sharp and the deblurred ones.

Rewritten from KupynOrest/DeblurGAN#56 ("Backward twice when using wgan-gp as critic"): the error
is raised at `self.loss_D.backward()` inside `backward_D`, the second time the critic loop runs.
The maintainer: "It seems that the bug is only with the new pytorch version"; the fix merged in
PR #91 ("Fix Backward twice ERROR") calls `self.loss_D.backward(retain_graph=True)`, because the
penalty's interpolates are built from `fake_B` itself, so each critic backward also runs through
the generator's forward that the next critic iteration needs again.
"""
import torch
import torch.nn as nn

SOURCE = "KupynOrest/DeblurGAN#56"
CATEGORY = "two-backwards"
CULPRIT = "fake_B"
CAUSE = "the gradient penalty's interpolates reach the generator's graph, freed by the first critic backward"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The critic loss with its gradient penalty trains the critic, run five times on one deblurred batch; "
          "the generator is trained by its own adversarial and content loss after the critic loop.")
GRADS = ["netG.parameters()", "netD.parameters()"]


def gradient_penalty(netD, real, fake, lambda_gp=10.0):
    alpha = torch.rand(real.size(0), 1)
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    grads = torch.autograd.grad(netD(interpolates).sum(), interpolates, create_graph=True)[0]
    return lambda_gp * ((grads.norm(2, dim=1) - 1) ** 2).mean()


torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16))
netD = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer_G = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.999))
for it in range(2):
    real_A, real_B = torch.randn(4, 16), torch.randn(4, 16)   # blurred, sharp
    fake_B = netG(real_A)
    for _ in range(5):                                        # critic_iters
        optimizer_D.zero_grad()
        loss_D = netD(fake_B.detach()).mean() - netD(real_B).mean() + gradient_penalty(netD, real_B, fake_B)
        loss_D.backward()  # BUG
        # FIX: loss_D.backward(retain_graph=True)
        optimizer_D.step()
    optimizer_G.zero_grad()
    loss_G = -netD(fake_B).mean() + 100 * (fake_B - real_B).abs().mean()
    loss_G.backward()
    optimizer_G.step()
