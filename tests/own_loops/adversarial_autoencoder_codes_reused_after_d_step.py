"""An adversarial autoencoder: the discriminator learns to tell the encoder's codes from samples of
the prior, then the encoder learns to fool it. The codes are computed once per batch and used by both
losses; the discriminator steps in between. Training crashes at the encoder's adversarial loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The discriminator loss trains the discriminator; the encoder's adversarial loss trains the "
          "encoder through codes made with its current weights, judged by the discriminator as it is after "
          "its step.")
GRADS = "enc.parameters()"
RULE = "reused-after-backward"
KIND = "recompute-in-step"

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 2))
disc = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
opt_e, opt_d = torch.optim.Adam(enc.parameters(), lr=1e-3), torch.optim.Adam(disc.parameters(), lr=1e-3)
for _step in range(2):
    x, prior = torch.randn(32, 10), torch.randn(32, 2)
    codes = enc(x)
    opt_d.zero_grad()
    d_loss = F.softplus(-disc(prior)).mean() + F.softplus(disc(codes)).mean()
    d_loss.backward()
    opt_d.step()
    opt_e.zero_grad()
    g_loss = F.softplus(-disc(codes)).mean()  # BUG
    # FIX: g_loss = F.softplus(-disc(enc(x))).mean()
    g_loss.backward()
    opt_e.step()
