"""Video extrapolation with an ODE-based generator (Vid-ODE): an encoder reads the observed frames,
an ODE solved with Euler steps carries the latent state to the future times, a decoder draws the
predicted frames, and an image discriminator and a sequence discriminator add an adversarial loss.

Rewritten from psh01087/Vid-ODE#6 ("Inplace Operation Error"): "I have run the train code, but I
encountered inplace operation error in adversarial loss." The generator's loss (MSE plus
`netG_adv_loss`, which passes the fakes through both discriminators) is computed before
`optimizer_netD.step()` updates the discriminators in place, and only then backpropagated. The fix
given in the thread, confirmed by another user ("swaping the order resolved the issue for me"):
"Swap the order of Train G and Train D ... Train G first, then train D."
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "psh01087/Vid-ODE#6"
CATEGORY = "two-backwards"
CULPRIT = "netD_img.last_conv.weight"
CAUSE = "the discriminators' step overwrites weights the generator's adversarial loss saved for its backward"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The MSE and adversarial losses train the ODE generator, with the discriminators as judges; "
          "the discriminator loss on detached fakes trains only the two discriminators.")
GRADS = ["netG.parameters()", "netD_img.parameters()", "netD_seq.parameters()"]


class VidODE(nn.Module):
    def __init__(self, c=1, dim=8):
        super().__init__()
        self.enc = nn.Conv2d(c, dim, 3, padding=1)
        self.ode_func = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), nn.Tanh())
        self.dec = nn.Conv2d(dim, c, 3, padding=1)

    def forward(self, observed, n_future, dt=0.5):
        h = torch.zeros_like(self.enc(observed[:, 0]))
        for t in range(observed.size(1)):                     # encode the observed frames
            h = torch.tanh(h + self.enc(observed[:, t]))
        preds = []
        for _ in range(n_future):                             # Euler steps of dh/dt = f(h)
            h = h + dt * self.ode_func(h)
            preds.append(torch.sigmoid(self.dec(h)))
        return torch.stack(preds, dim=1)


class Discriminator(nn.Module):
    def __init__(self, in_ch):
        super().__init__()
        self.layer_1 = nn.Sequential(nn.Conv2d(in_ch, 16, 4, 2, 1, bias=False), nn.LeakyReLU(0.2))
        self.last_conv = nn.Conv2d(16, 8, 3, 1, 1, bias=False)

    def forward(self, x):
        return self.last_conv(self.layer_1(x))

    def netD_adv_loss(self, real, fake):
        pred_fake, pred_real = self(fake.detach()), self(real)
        return (torch.mean((pred_real - 1) ** 2) + torch.mean(pred_fake ** 2)) * 0.5

    def netG_adv_loss(self, fake):
        return torch.mean((self(fake) - 1) ** 2)


def as_sequence(observed, frames):     # the sequence discriminator sees observed and predicted frames stacked
    return torch.cat([observed, frames], dim=1).flatten(1, 2)


torch.manual_seed(0)
b, t_in, t_out, c, hw = 2, 3, 3, 1, 8
netG = VidODE(c)
netD_img, netD_seq = Discriminator(c), Discriminator(c * (t_in + t_out))
optimizer_netG = torch.optim.Adamax(netG.parameters(), lr=1e-3)
optimizer_netD = torch.optim.Adamax(list(netD_img.parameters()) + list(netD_seq.parameters()), lr=1e-3)
lamb_adv = 0.003
for it in range(2):
    video = torch.rand(b, t_in + t_out, c, hw, hw)
    input_real, real = video[:, :t_in], video[:, t_in:]
    fake = netG(input_real, t_out)
    loss_netG = F.mse_loss(fake, real)
    loss_netD = lamb_adv * netD_seq.netD_adv_loss(as_sequence(input_real, real), as_sequence(input_real, fake))
    loss_netD += lamb_adv * netD_img.netD_adv_loss(real.reshape(-1, c, hw, hw), fake.reshape(-1, c, hw, hw))
    loss_adv_netG = lamb_adv * netD_seq.netG_adv_loss(as_sequence(input_real, fake))
    loss_adv_netG += lamb_adv * netD_img.netG_adv_loss(fake.reshape(-1, c, hw, hw))
    loss_netG += loss_adv_netG

    # Train D
    optimizer_netD.zero_grad()  # BUG
    # FIX: optimizer_netG.zero_grad()
    loss_netD.backward()  # BUG
    # FIX: loss_netG.backward()
    optimizer_netD.step()  # BUG
    # FIX: optimizer_netG.step()
    # Train G
    optimizer_netG.zero_grad()  # BUG
    # FIX: optimizer_netD.zero_grad()
    loss_netG.backward()  # BUG
    # FIX: loss_netD.backward()
    optimizer_netG.step()  # BUG
    # FIX: optimizer_netD.step()
