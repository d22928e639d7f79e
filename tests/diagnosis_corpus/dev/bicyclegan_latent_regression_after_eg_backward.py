"""BicycleGAN (cVAE-GAN plus cLR-GAN, image-to-image translation): in one step of G and E, the latent
regression loss asks the encoder E to recover a random code from the generator G's output.
Rewritten from junyanz/BicycleGAN#81 ("Why we use 'retain_graph' when backwarding loss_G?"): the
reporter set `retain_graph` to False in `backward_EG`; the maintainer: "I remember it might break in
`backward_G_alone` without retain graph." `loss_G` (adversarial, L1, KL) and `loss_z_L1`
(|E(G(A, z_random)) - z_random|) both go through `G(A, z_random)`; `loss_G.backward()` frees it, and
`loss_z_L1.backward()`, which trains G alone (E is frozen for it), needs it again.
"""
import torch
import torch.nn as nn

SOURCE = "junyanz/BicycleGAN#81"
CATEGORY = "two-backwards"
CULPRIT = "model.fake_B_random"
CAUSE = "loss_G's backward frees the graph of G(A, z_random) that loss_z_L1's backward needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The loss_G terms train the generator and the encoder; loss_z_L1 trains the generator alone "
          "through its output for a random code, with the encoder frozen.")
GRADS = ["model.netG.parameters()", "model.netE.parameters()"]


class BiCycleGANModel:
    def __init__(self, nz=2):
        self.netG = nn.Sequential(nn.Linear(8 + nz, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
        self.netE, self.netD = nn.Linear(8, 2 * nz), nn.Sequential(nn.Linear(16, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.optimizer_G, self.optimizer_E = (torch.optim.Adam(n.parameters(), lr=2e-4) for n in (self.netG, self.netE))
        self.nz = nz

    def forward(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B
        self.mu, self.logvar = self.netE(real_B).chunk(2, dim=1)
        z_encoded = self.mu + torch.randn_like(self.mu) * torch.exp(0.5 * self.logvar)
        self.z_random = torch.randn(real_A.size(0), self.nz)
        self.fake_B_encoded = self.netG(torch.cat([real_A, z_encoded], 1))
        self.fake_B_random = self.netG(torch.cat([real_A, self.z_random], 1))
        self.mu2 = self.netE(self.fake_B_random).chunk(2, dim=1)[0]

    def update_G_and_E(self):
        self.optimizer_E.zero_grad(), self.optimizer_G.zero_grad()
        loss_G_GAN = sum(((self.netD(torch.cat([self.real_A, fake], 1)) - 1) ** 2).mean()
                         for fake in (self.fake_B_encoded, self.fake_B_random))
        loss_kl = torch.sum(1 + self.logvar - self.mu.pow(2) - self.logvar.exp()) * (-0.5 * 0.01)
        self.loss_G = loss_G_GAN + torch.abs(self.fake_B_encoded - self.real_B).mean() * 10.0 + loss_kl
        self.loss_G.backward()  # BUG
        # FIX: self.loss_G.backward(retain_graph=True)
        self.netE.requires_grad_(False)                     # backward_G_alone: the encoder is frozen
        self.loss_z_L1 = torch.mean(torch.abs(self.mu2 - self.z_random)) * 0.5
        self.loss_z_L1.backward()
        self.netE.requires_grad_(True)
        self.optimizer_E.step(), self.optimizer_G.step()


torch.manual_seed(0)
model = BiCycleGANModel()
model.netD.requires_grad_(False)                              # D is trained in its own step (not shown)
for it in range(2):
    model.forward(torch.randn(4, 8), torch.randn(4, 8).tanh())
    model.update_G_and_E()
