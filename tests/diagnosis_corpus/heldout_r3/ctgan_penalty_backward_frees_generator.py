"""CTGAN, a conditional GAN for tabular data: the critic's step backpropagates a WGAN-GP gradient
penalty and the Wasserstein loss as two backward calls before one optimizer step, and the fake rows
feeding both come from the generator without a detach.
Rewritten from sdv-dev/CTGAN#37 ("Retention of gradient penalty Graph"): asked what
`pen.backward(retain_graph=True)` is for, the maintainer answered: "the computing graph will be
deleted after running backward. But here the computing graph is still needed for another backward
pass (loss_d.backward). retain_graph prevents pytorch from deleting the computing graph." Both losses
reach the generator's forward through the fake rows (the penalty through the interpolates).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "sdv-dev/CTGAN#37"
CATEGORY = "two-backwards"
CULPRIT = "fake_cat"
CAUSE = "the penalty's backward frees the generator's graph under the fake rows that loss_d still needs"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("The gradient penalty and the Wasserstein loss together train the critic in one step; "
          "the generator is trained by its own loss afterwards.")
GRADS = ["discriminator.parameters()", "generator.parameters()"]


def calc_gradient_penalty(discriminator, real_data, fake_data, lambda_=10):
    alpha = torch.rand(real_data.size(0), 1)
    interpolates = alpha * real_data + (1 - alpha) * fake_data
    disc_interpolates = discriminator(interpolates)
    gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                    grad_outputs=torch.ones_like(disc_interpolates), create_graph=True, retain_graph=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_


def apply_activate(data):   # one continuous column (tanh) and one categorical column of 3 values
    return torch.cat([torch.tanh(data[:, :1]), F.softmax(data[:, 1:], dim=1)], dim=1)


torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(6 + 3, 16), nn.ReLU(), nn.Linear(16, 4))
discriminator = nn.Sequential(nn.Linear(4 + 3, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optimizerG, optimizerD = (torch.optim.Adam(m.parameters(), lr=2e-4, betas=(0.5, 0.9)) for m in (generator, discriminator))
for step in range(2):
    real = torch.cat([torch.randn(8, 1).tanh(), F.one_hot(torch.randint(0, 3, (8,)), 3).float()], dim=1)
    c1 = F.one_hot(torch.randint(0, 3, (8,)), 3).float()
    fake_cat = torch.cat([apply_activate(generator(torch.cat([torch.randn(8, 6), c1], dim=1))), c1], dim=1)
    real_cat = torch.cat([real, c1], dim=1)
    pen = calc_gradient_penalty(discriminator, real_cat, fake_cat)
    loss_d = -(torch.mean(discriminator(real_cat)) - torch.mean(discriminator(fake_cat)))
    optimizerD.zero_grad()
    pen.backward()  # BUG
    # FIX: pen.backward(retain_graph=True)
    loss_d.backward()
    optimizerD.step()
    fake = generator(torch.cat([torch.randn(8, 6), c1], dim=1))
    loss_g = -torch.mean(discriminator(torch.cat([apply_activate(fake), c1], dim=1))) + F.cross_entropy(fake[:, 1:], c1.argmax(1))
    optimizerG.zero_grad()
    loss_g.backward()
    optimizerG.step()
