"""Non-stationary texture expansion: a generator doubles a texture crop, and its output is judged by
a Gram-matrix style loss and a perceptual loss on fixed VGG-like features, plus a GAN loss from a
frozen discriminator. The style loss is backwarded first, then the other two together.

Rewritten from jessemelpolio/non-stationary_texture_syn#15 ("about the style_loss backward"): asked
whether `(style_loss+perceptual_loss+gan_G).backward()` differs from
`style_loss.backward(retain_graph=True)` followed by `(perceptual_loss+gan_G).backward()`, the
maintainer answers that the difference should be minor and that the repository keeps the graph on
the first backward ("the computational graph is maintained in the memory till calling the backward
function again"). Without retain_graph=True the second backward finds the generator's buffers freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "jessemelpolio/non-stationary_texture_syn#15"
CATEGORY = "two-backwards"
CULPRIT = "fake_B"
CAUSE = "the style loss's backward frees the generator graph the other losses share"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("The style, perceptual and GAN losses all train the generator in the same step; the feature "
          "network and the discriminator stay fixed.")
GRADS = "netG.parameters()"


def gram(f):
    b, c, h, w = f.shape
    f = f.reshape(b, c, h * w)
    return f @ f.transpose(1, 2) / (c * h * w)


torch.manual_seed(0)
netG = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Upsample(scale_factor=2), nn.Conv2d(8, 3, 3, padding=1))
vgg = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).requires_grad_(False)
netD = nn.Sequential(nn.Conv2d(3, 8, 4, stride=2), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3)).requires_grad_(False)
optimizer_G = torch.optim.Adam(netG.parameters(), lr=2e-4)
for step in range(2):
    real_A, real_B = torch.rand(2, 3, 8, 8), torch.rand(2, 3, 16, 16)
    fake_B = netG(real_A)
    feat_fake, feat_real = vgg(fake_B), vgg(real_B)
    style_loss = F.mse_loss(gram(feat_fake), gram(feat_real)) * 100
    perceptual_loss = F.mse_loss(feat_fake, feat_real)
    gan_G = F.softplus(-netD(fake_B)).mean()
    optimizer_G.zero_grad()
    style_loss.backward()  # BUG
    # FIX: style_loss.backward(retain_graph=True)
    (perceptual_loss + gan_G).backward()
    optimizer_G.step()
