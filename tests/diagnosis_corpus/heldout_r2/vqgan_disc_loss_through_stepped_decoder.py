"""A VQGAN first stage: encoder, codebook (nearest code, straight-through), decoder and a discriminator,
one optimizer for the VQ autoencoder and one for the discriminator, both fed by one forward pass.

Rewritten from Shubhamai/pytorch-vqgan#3 ("The subsequent optimizer steps in VQ Trainer are wrong"):
the trainer runs `vq_loss.backward(retain_graph=True)`, then `gan_loss.backward()` on the same
reconstruction, then both steps: "the gradients of G are affected by the gradients of D(G(z)). Since
you perform two optimizer steps subsequently, G is updated by considering the additional gradient of
D." The answer in the thread: train the discriminator on "generated samples with `.detach()`", which
"is necessary here to prevent gradients from flowing into the generator", whereas "the author attempts
to retain the computation graph by using retain_graph=True [...] instead of applying detach()". Here
the user stepped the VQ optimizer before the discriminator's backward, so that the VQ update no longer
takes the discriminator's gradient: that backward still runs into the decoder, whose weights the step
has just changed in place. The thread's `.detach()` fixes both.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Shubhamai/pytorch-vqgan#3"
CATEGORY = "inplace"
CULPRIT = "decoder[2].weight"
CAUSE = "the discriminator loss backwards into the decoder after the VQ optimizer stepped it"
FIX_KIND = "detach-input"
ERROR = "inplace"
INTENT = ("The VQ loss (reconstruction, codebook, commitment and adversarial terms) trains the encoder, "
          "the codebook and the decoder; the discriminator loss trains only the discriminator.")
GRADS = ["encoder.parameters()", "codebook.weight", "decoder.parameters()", "discriminator.parameters()"]

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
codebook = nn.Embedding(10, 4)
decoder = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 16))
discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_vq = torch.optim.Adam([*encoder.parameters(), *codebook.parameters(), *decoder.parameters()], lr=2e-4)
opt_disc = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
for step in range(2):
    imgs = torch.randn(8, 16)
    z = encoder(imgs)
    z_q = codebook(torch.cdist(z, codebook.weight).argmin(1))
    q_loss = F.mse_loss(z_q, z.detach()) + 0.25 * F.mse_loss(z, z_q.detach())
    decoded = decoder(z + (z_q - z).detach())
    g_loss = -discriminator(decoded).mean()
    vq_loss = F.l1_loss(decoded, imgs) + q_loss + 0.1 * g_loss
    opt_vq.zero_grad()
    vq_loss.backward(retain_graph=True)
    opt_vq.step()
    disc_real, disc_fake = discriminator(imgs), discriminator(decoded)  # BUG
    # FIX: disc_real, disc_fake = discriminator(imgs), discriminator(decoded.detach())
    gan_loss = 0.5 * (F.softplus(-disc_real).mean() + F.softplus(disc_fake).mean())   # "vanilla" GAN loss
    opt_disc.zero_grad()
    gan_loss.backward()
    opt_disc.step()
