"""AdvGAN: a generator makes adversarial perturbations against a fixed classifier, with a discriminator, and several
generator steps per batch. Rewritten from GiorgosKarantonis/Adversarial-Attacks-with-Relativistic-AdvGAN#8 ("The step
for training G can't be more than 1"): with `n_steps_G > 1` and `retain_graph=True` added to `loss_G.backward()`,
training fails with "one of the variables needed for gradient computation has been modified by an inplace operation".
The fix given in the thread: "Add these line in the training of G: perturbation = self.G(x); adv_images = ...", i.e.
make the perturbation again at every generator step; the one made per batch is backwarded after optimizer_G.step().
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "GiorgosKarantonis/Adversarial-Attacks-with-Relativistic-AdvGAN#8"
CATEGORY = "computed-once"
CULPRIT = "G[2].weight"
CAUSE = "the perturbation made once per batch is backwarded again after optimizer_G.step()"
FIX_KIND = "recompute-in-step"
ERROR = "inplace"
INTENT = ("The generator loss trains the generator G through the perturbation it makes at that generator step; loss_D trains the "
          "discriminator D on detached adversarial images; the target classifier is fixed.")
GRADS = ["G.parameters()", "D.parameters()"]


def make_adv(G, x, l_inf_bound=0.3):
    perturbation = G(x)
    return perturbation, torch.clamp(torch.clamp(perturbation, -l_inf_bound, l_inf_bound) + x, 0, 1)


torch.manual_seed(0)
target_model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).requires_grad_(False)
G = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh())
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optimizer_G, optimizer_D = torch.optim.Adam(G.parameters(), lr=1e-3), torch.optim.Adam(D.parameters(), lr=1e-3)
n_steps_D, n_steps_G, adv_lambda, pert_lambda = 1, 2, 10.0, 1.0
for batch in range(2):
    x, labels = torch.rand(8, 16), torch.randint(0, 4, (8,))
    perturbation, adv_images = make_adv(G, x)
    for i in range(n_steps_D):
        optimizer_D.zero_grad()
        d_real, d_fake = D(x), D(adv_images.detach())  # relativistic average GAN loss
        loss_D = (F.binary_cross_entropy_with_logits(d_real - d_fake.mean(), torch.ones_like(d_real))
                  + F.binary_cross_entropy_with_logits(d_fake - d_real.mean(), torch.zeros_like(d_fake))) / 2
        loss_D.backward()
        optimizer_D.step()
    for i in range(n_steps_G):
        optimizer_G.zero_grad()
        d_fake = D(adv_images)  # BUG
        # FIX: perturbation, adv_images = make_adv(G, x); d_fake = D(adv_images)
        loss_G_gan = F.binary_cross_entropy_with_logits(d_fake - D(x).detach().mean(), torch.ones_like(d_fake))
        loss_perturb = perturbation.flatten(1).norm(dim=1).mean()
        logits, onehot = target_model(adv_images), F.one_hot(labels, 4).bool()
        # C&W loss: push the true class's logit below the best other class
        loss_adv = torch.clamp(logits[onehot] - logits.masked_fill(onehot, -1e4).max(1).values, min=0).mean()
        loss_G = adv_lambda * loss_adv + pert_lambda * loss_perturb + loss_G_gan
        loss_G.backward(retain_graph=True)
        optimizer_G.step()
