"""FactorVAE: the VAE optimizer steps before the discriminator's loss goes back through the encoder.

Rewritten from 1Konny/FactorVAE#15 ("Inplace problem when calling D_tc_loss.backward()"):
`vae_loss.backward(retain_graph=True); optim_VAE.step()` then `D_tc_loss.backward()` raised
"... is at version 2; expected version 1"; as FrankBrongers answered, the VAE optimizer's step
changes weights the D loss still needs: every backward must come before the steps.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "1Konny/FactorVAE#15"
CATEGORY = "inplace"
CULPRIT = "encoder[2].weight"
CAUSE = "the VAE step rewrites encoder weights saved for D's loss"
FIX_KIND = "backward-before-step"
ERROR = "inplace"

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
decoder = nn.Linear(4, 6)
D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2))
optim_VAE = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)
optim_D = torch.optim.Adam(D.parameters(), lr=1e-3)
zeros, ones = torch.zeros(16, dtype=torch.long), torch.ones(16, dtype=torch.long)
for step in range(2):
    x = torch.randn(16, 6)
    z = encoder(x)
    D_z = D(z)
    vae_tc_loss = (D_z[:, 0] - D_z[:, 1]).mean()
    vae_loss = F.mse_loss(decoder(z), x) + vae_tc_loss
    optim_VAE.zero_grad()
    vae_loss.backward(retain_graph=True)
    optim_VAE.step()  # BUG
    # FIX: pass
    z_pperm = z[torch.randperm(16)].detach()
    D_tc_loss = 0.5 * (F.cross_entropy(D_z, zeros) + F.cross_entropy(D(z_pperm), ones))
    optim_D.zero_grad()
    D_tc_loss.backward()
    optim_D.step()  # BUG
    # FIX: optim_VAE.step(); optim_D.step()
