"""BicycleGAN (cVAE-GAN plus cLR-GAN) for image-to-image translation: the encoder E maps the target
image to a latent code, the generator G translates the input with a code, and in the same step the
latent regression loss asks E to recover a random code from G's output.

Rewritten from junyanz/BicycleGAN#81 ("Why we use 'retain_graph' when backwarding loss_G?"): the
reporter set `retain_graph` to False in `backward_EG` and asked whether it was needed; the
maintainer: "I remember it might break in `backward_G_alone` without retain graph." `loss_G`
(adversarial, L1, KL) and `loss_z_L1` (|E(G(A, z_random)) - z_random|) both go through
`G(A, z_random)`; `loss_G.backward()` frees that part of the graph, and `loss_z_L1.backward()`, which
trains G alone (E is frozen for it), needs it again.
"""
import torch
import torch.nn as nn

SOURCE = "junyanz/BicycleGAN#81"
CATEGORY = "two-backwards"
CULPRIT = "model.fake_B_random"
CAUSE = "loss_G's backward frees the graph of G(A, z_random) that loss_z_L1's backward needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("loss_G trains the generator and the encoder; loss_z_L1 trains the generator alone through "
          "its output for a random code, with the encoder frozen.")
GRADS = ["model.netG.parameters()", "model.netE.parameters()"]


def set_requires_grad(nets, requires_grad):
    for net in nets:
        for p in net.parameters():
            p.requires_grad = requires_grad


class Encoder(nn.Module):
    def __init__(self, nz=2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2))
        self.fc, self.fcVar = nn.Linear(16, nz), nn.Linear(16, nz)

    def forward(self, x):
        h = self.body(x)
        return self.fc(h), self.fcVar(h)


class BiCycleGANModel:
    def __init__(self, nz=2):
        self.nz = nz
        self.netG = nn.Sequential(nn.Linear(8 + nz, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
        self.netE, self.netD = Encoder(nz), nn.Sequential(nn.Linear(16, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.optimizer_E = torch.optim.Adam(self.netE.parameters(), lr=2e-4, betas=(0.5, 0.999))

    def forward(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B
        self.mu, self.logvar = self.netE(real_B)
        z_encoded = self.mu + torch.randn_like(self.mu) * torch.exp(0.5 * self.logvar)
        self.z_random = torch.randn(real_A.size(0), self.nz)
        self.fake_B_encoded = self.netG(torch.cat([real_A, z_encoded], 1))
        self.fake_B_random = self.netG(torch.cat([real_A, self.z_random], 1))
        self.mu2, _ = self.netE(self.fake_B_random)

    def backward_EG(self):
        pred_fake = self.netD(torch.cat([self.real_A, self.fake_B_encoded], 1))
        pred_fake2 = self.netD(torch.cat([self.real_A, self.fake_B_random], 1))
        loss_G_GAN = ((pred_fake - 1) ** 2).mean() + ((pred_fake2 - 1) ** 2).mean()
        loss_kl = torch.sum(1 + self.logvar - self.mu.pow(2) - self.logvar.exp()) * (-0.5 * 0.01)
        loss_G_L1 = torch.abs(self.fake_B_encoded - self.real_B).mean() * 10.0
        self.loss_G = loss_G_GAN + loss_G_L1 + loss_kl
        self.loss_G.backward()  # BUG
        # FIX: self.loss_G.backward(retain_graph=True)

    def backward_G_alone(self):
        self.loss_z_L1 = torch.mean(torch.abs(self.mu2 - self.z_random)) * 0.5
        self.loss_z_L1.backward()

    def update_G_and_E(self):
        set_requires_grad([self.netD], False)
        self.optimizer_E.zero_grad()
        self.optimizer_G.zero_grad()
        self.backward_EG()
        set_requires_grad([self.netE], False)
        self.backward_G_alone()
        set_requires_grad([self.netE], True)
        self.optimizer_E.step()
        self.optimizer_G.step()


torch.manual_seed(0)
model = BiCycleGANModel()
for it in range(2):
    real_A, real_B = torch.randn(4, 8), torch.randn(4, 8).tanh()
    model.forward(real_A, real_B)
    model.update_G_and_E()
