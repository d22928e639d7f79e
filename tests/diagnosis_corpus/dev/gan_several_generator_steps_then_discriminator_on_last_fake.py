"""A GAN trained with n generator updates per discriminator update (n > m): the generator loop runs
g_update_factor times, then the discriminator step scores the real batch and the last fake batch.

Rewritten from the Q&A article "Как исправить ошибку Trying to backward through the graph a second
time при обучении GAN в PyTorch" (pytroubles.com, 2025): the error appears "although backward is
called for the discriminator's loss only once. The reason is subtler: the discriminator's input is a
tensor obtained through a computation graph that was already freed during the generator's
backward" (translated), and the fix is `detach()` on the fake batch fed to the discriminator step (the
discriminator loss must not reach the generator).
"""
import torch
import torch.nn as nn

SOURCE = "Как исправить ошибку Trying to backward through the graph a second time при обучении GAN в PyTorch"
CATEGORY = "two-backwards"
CULPRIT = "fake_batch"
CAUSE = "the discriminator step scores the generator loop's last fake batch with its freed graph"
FIX_KIND = "detach-input"
ERROR = "second time"
INTENT = ("The generator loss trains only the generator, several times per batch; the discriminator "
          "loss trains only the discriminator, on the real batch and the last fake batch.")
GRADS = "netD.parameters()"

torch.manual_seed(0)
latent_dim, data_dim, g_update_factor = 4, 16, 3
netG = nn.Sequential(nn.Linear(latent_dim, 32), nn.ReLU(), nn.Linear(32, data_dim), nn.Tanh())
netD = nn.Sequential(nn.Linear(data_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
bce_loss = nn.BCELoss()
optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
for batch_id in range(2):
    real_batch = torch.rand(8, data_dim) * 2 - 1
    bsz = real_batch.shape[0]
    for _ in range(g_update_factor):
        z = torch.randn(bsz, latent_dim)
        fake_batch = netG(z)
        gen_scores = netD(fake_batch).view(-1)
        g_loss = bce_loss(gen_scores, torch.ones_like(gen_scores))
        g_loss.backward()
        optG.step()
        netG.zero_grad()
    real_scores = netD(real_batch).view(-1)
    fake_scores = netD(fake_batch).view(-1)  # BUG
    # FIX: fake_scores = netD(fake_batch.detach()).view(-1)
    d_loss = bce_loss(real_scores, torch.ones_like(real_scores)) + bce_loss(fake_scores, torch.zeros_like(fake_scores))
    netD.zero_grad()
    d_loss.backward()
    optD.step()
