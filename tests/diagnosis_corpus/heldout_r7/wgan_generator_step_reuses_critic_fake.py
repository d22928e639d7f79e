"""A Wasserstein GAN with weight clipping: the critic is trained n_critic times per generator
step, each time on a fresh batch of generated images, and the generator step then asks the critic
to score generated images.

Rewritten from eriklindernoren/PyTorch-GAN#6 ("wgan retrain_graph"): wgan.py raised "Trying to
backward through the graph a second time" at `gen_validity.backward(valid)`. The maintainer:
"Oh, a typo had snuck in there"; the fix (commit "WGAN: Fixed typo. Resolves #6") replaces
`gen_validity = discriminator(fake_imgs)` with `gen_validity = discriminator(gen_imgs)`: the
generator step had scored `fake_imgs`, the last critic iteration's images, whose generator graph
`fake_validity.backward(fake)` had already freed, instead of the fresh `gen_imgs`.
"""
import torch
import torch.nn as nn

SOURCE = "eriklindernoren/PyTorch-GAN#6"
CATEGORY = "two-backwards"
CULPRIT = "fake_imgs"
CAUSE = "the generator step scores the critic loop's fake images, whose graph was freed"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The critic losses train the critic on real and generated images; the generator loss trains the "
          "generator through the critic's score of the batch the generator step itself generates.")
GRADS = ["generator.parameters()", "discriminator.parameters()"]

torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 16), nn.Tanh())
discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optimizer_G = torch.optim.RMSprop(generator.parameters(), lr=5e-5)
optimizer_D = torch.optim.RMSprop(discriminator.parameters(), lr=5e-5)
n_critic, clip_value = 3, 0.01
for i in range(2):
    for _ in range(n_critic):
        real_imgs = torch.rand(4, 16) * 2 - 1
        valid, fake = torch.full((4, 1), -1.0), torch.full((4, 1), 1.0)
        optimizer_D.zero_grad()
        z = torch.randn(4, 8)
        fake_imgs = generator(z)
        real_validity = discriminator(real_imgs)
        real_validity.backward(valid)
        fake_validity = discriminator(fake_imgs)
        fake_validity.backward(fake)
        optimizer_D.step()
        for p in discriminator.parameters():
            p.data.clamp_(-clip_value, clip_value)
    optimizer_G.zero_grad()
    z = torch.randn(4, 8)
    gen_imgs = generator(z)
    gen_validity = discriminator(fake_imgs)  # BUG
    # FIX: gen_validity = discriminator(gen_imgs)
    gen_validity.backward(valid)
    optimizer_G.step()
