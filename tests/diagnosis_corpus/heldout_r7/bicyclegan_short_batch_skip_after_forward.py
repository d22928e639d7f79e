"""BicycleGAN, from junyanz/BicycleGAN#21 ("skip this point data_size = 1"): then `self.loss_G.backward(
retain_graph=True)` raises "Trying to backward through the graph a second time": train.py asked `is_skip()`
before the forward that sets the flag, so update_G reused the previous batch's fakes. The maintainer's fix
(commit "bug fix (is_skip)"): `is_skip()` decides from the input's size; train.py calls `set_input` first."""
import torch

SOURCE = "junyanz/BicycleGAN#21"
CATEGORY = "carried-state"
CULPRIT = "model.fake_B_random"
CAUSE = "update_G runs on the short batch and reuses the previous batch's fakes"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = "The discriminator loss trains the discriminator; the generator loss trains the generator and the encoder."
GRADS = ["model.netG.parameters()", "model.netE.parameters()", "model.netD.parameters()"]
class BiCycleGANModel:
    def __init__(self, batch_size=4, nz=2):
        self.batch_size, self.nz, self.skip = batch_size, nz, False
        self.netG, self.netE, self.netD = torch.nn.Linear(8 + nz, 8), torch.nn.Linear(8, 2 * nz), torch.nn.Linear(16, 1)
        self.opt_G, self.opt_E, self.opt_D = (torch.optim.Adam(n.parameters()) for n in (self.netG, self.netE, self.netD))
    def set_input(self, data):
        self.input_A, self.input_B = data
    def is_skip(self):
        return self.skip  # BUG
        # FIX: return self.input_A.size(0) < self.batch_size
    def forward(self):
        self.skip = self.input_A.size(0) < self.batch_size
        if self.skip:
            return print(f"skip this point data_size = {self.input_A.size(0)}")
        self.real_A, self.real_B = self.input_A[:self.batch_size // 2], self.input_B[:self.batch_size // 2]
        self.mu, self.logvar = self.netE(self.real_B).chunk(2, dim=1)
        self.fake_B_encoded = self.netG(torch.cat([self.real_A, self.mu + self.logvar.exp() ** .5 * torch.randn(2, 2)], 1))
        self.z_random = torch.randn(len(self.real_A), self.nz)
        self.fake_B_random = self.netG(torch.cat([self.real_A, self.z_random], 1))
    def D(self, fake):
        return self.netD(torch.cat([self.real_A, fake], 1))
    def update_D(self, data):
        self.set_input(data), self.forward()
        if self.is_skip():
            return
        self.opt_D.zero_grad()
        fakes = (self.fake_B_encoded.detach(), self.fake_B_random.detach())
        sum(self.D(f).pow(2).mean() + (self.D(self.real_B) - 1).pow(2).mean() for f in fakes).backward()
        self.opt_D.step()
    def update_G(self):
        self.opt_G.zero_grad(), self.opt_E.zero_grad()
        gan = sum((self.D(f) - 1).pow(2).mean() for f in (self.fake_B_encoded, self.fake_B_random))
        kl = (self.mu.pow(2) + self.logvar.exp() - 1 - self.logvar).mean()
        self.loss_G = gan + 10 * (self.fake_B_encoded - self.real_B).abs().mean() + 0.01 * kl
        self.loss_G.backward(retain_graph=True)
        (self.netE(self.fake_B_random)[:, :self.nz] - self.z_random).abs().mean().backward(inputs=list(self.netG.parameters()))
        self.opt_E.step(), self.opt_G.step()
torch.manual_seed(0)
model = BiCycleGANModel()
for data in [(torch.randn(n, 8), torch.randn(n, 8)) for n in (4, 4, 1)]:   # an odd-sized dataset
    if model.is_skip():  # BUG
        # FIX: if model.set_input(data) or model.is_skip():
        continue
    model.update_D(data)
    model.update_G()
