"""A GAN vocoder's training step (Avocodo, built on HiFi-GAN's train.py): the generator turns a
mel-spectrogram into a waveform; the discriminator step scores real against generated audio, then
the generator step scores the generated audio again and adds feature-matching and mel losses.

Rewritten from rishikksh20/Avocodo-pytorch#4 ("why add detach() ?"), asking why train.py detaches
`y_g_hat` in the discriminator step (line 130) and not in the generator step (line 148). The
answer: the discriminator step is "for updating the discriminator only, we take the detach ... so
that the generator don't get gradient"; in line 148 "we will update gradient for the generator".
Without that detach, `loss_disc_all.backward()` runs through the generator and frees its graph,
and the generator's own backward then meets the freed buffers.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "rishikksh20/Avocodo-pytorch#4"
CATEGORY = "two-backwards"
CULPRIT = "y_g_hat"
CAUSE = "the discriminator loss backwards through the generator and frees its graph"
FIX_KIND = "detach-input"
ERROR = "second time"
INTENT = ("The discriminator loss trains only the discriminator; the generator loss (adversarial, "
          "feature matching and mel) trains only the generator.")
GRADS = "generator.parameters()"


def mel(wav):                                        # a fixed filterbank standing in for the mel transform
    return torch.log1p((wav.unfold(-1, 8, 4) @ filterbank).abs())


torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(10, 32), nn.LeakyReLU(0.1), nn.Linear(32, 64), nn.Tanh())
discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.1), nn.Linear(32, 16), nn.LeakyReLU(0.1), nn.Linear(16, 1))
filterbank = torch.rand(8, 10)
optim_g = torch.optim.AdamW(generator.parameters(), lr=2e-4, betas=(0.8, 0.99))
optim_d = torch.optim.AdamW(discriminator.parameters(), lr=2e-4, betas=(0.8, 0.99))
for step in range(2):
    y = torch.randn(4, 64).clamp(-1, 1)
    x = mel(y).mean(1)
    y_g_hat = generator(x)
    optim_d.zero_grad()
    y_d_r, y_d_g = discriminator(y), discriminator(y_g_hat)  # BUG
    # FIX: y_d_r, y_d_g = discriminator(y), discriminator(y_g_hat.detach())
    loss_disc_all = ((1 - y_d_r) ** 2).mean() + (y_d_g ** 2).mean()
    loss_disc_all.backward()
    optim_d.step()
    optim_g.zero_grad()
    loss_mel = F.l1_loss(mel(y), mel(y_g_hat)) * 45
    fmap_r, fmap_g = discriminator[:2](y), discriminator[:2](y_g_hat)
    loss_gen_all = ((1 - discriminator(y_g_hat)) ** 2).mean() + 2 * F.l1_loss(fmap_g, fmap_r) + loss_mel
    loss_gen_all.backward()
    optim_g.step()
