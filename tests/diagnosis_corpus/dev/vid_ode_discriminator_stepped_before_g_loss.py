"""Video extrapolation with Vid-ODE (Euler steps carry the encoded state to future frames) and an image
and a sequence discriminator. Rewritten from psh01087/Vid-ODE#6 ("Inplace Operation Error"): the
generator's loss (MSE plus the adversarial loss through both discriminators) is backpropagated after
`optimizer_netD.step()` updated the discriminators in place. The fix given in the thread, confirmed by
another user ("swaping the order resolved the issue for me"): "Swap the order of Train G and Train D
... Train G first, then train D."
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "psh01087/Vid-ODE#6"
CATEGORY = "two-backwards"
CULPRIT = "netD_img[2].weight"
CAUSE = "the discriminators' step overwrites weights the generator's adversarial loss saved for its backward"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The MSE and adversarial losses train the ODE generator, with the discriminators as judges; "
          "the discriminator loss on detached fakes trains only the two discriminators.")
GRADS = ["netG.parameters()", "netD_img.parameters()", "netD_seq.parameters()"]


class VidODE(nn.Module):
    def __init__(self, c=1, dim=8):
        super().__init__()
        self.enc, self.dec = nn.Conv2d(c, dim, 3, padding=1), nn.Conv2d(dim, c, 3, padding=1)
        self.ode_func = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), nn.Tanh())

    def forward(self, observed, n_future, dt=0.5):
        h, preds = sum(torch.tanh(self.enc(observed[:, t])) for t in range(observed.size(1))), []
        for _ in range(n_future):                             # Euler steps of dh/dt = f(h)
            h = h + dt * self.ode_func(h)
            preds.append(torch.sigmoid(self.dec(h)))
        return torch.stack(preds, dim=1)


def train(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


torch.manual_seed(0)
netG, netD_img, netD_seq = VidODE(), *(nn.Sequential(nn.Conv2d(ch, 16, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(16, 8, 3, 1, 1))
                                        for ch in (1, 6))   # one frame; 3 observed + 3 predicted frames
optimizer_netG = torch.optim.Adamax(netG.parameters(), lr=1e-3)
optimizer_netD = torch.optim.Adamax(list(netD_img.parameters()) + list(netD_seq.parameters()), lr=1e-3)
for it in range(2):
    video = torch.rand(2, 6, 1, 8, 8)
    input_real, real = video[:, :3], video[:, 3:]
    fake = netG(input_real, 3)
    pairs = [(netD_seq, video.flatten(1, 2), torch.cat([input_real, fake], 1).flatten(1, 2)),
             (netD_img, real.flatten(0, 1), fake.flatten(0, 1))]
    loss_netD = sum(0.003 * 0.5 * (torch.mean((D(r) - 1) ** 2) + torch.mean(D(f.detach()) ** 2)) for D, r, f in pairs)
    loss_netG = F.mse_loss(fake, real) + sum(0.003 * torch.mean((D(f) - 1) ** 2) for D, _, f in pairs)
    train(optimizer_netD, loss_netD)  # BUG
    # FIX: train(optimizer_netG, loss_netG)
    train(optimizer_netG, loss_netG)  # BUG
    # FIX: train(optimizer_netD, loss_netD)
