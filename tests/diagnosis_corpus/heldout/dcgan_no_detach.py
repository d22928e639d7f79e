"""DCGAN whose D step feeds G's output to D without detach.

Rewritten from pytorch/examples#116 ("why is detach necessary"): a user who missed the detach in
the DCGAN example got "Trying to backward through the graph second time"; the example's code
(the maintainers' fix) is `output = netD(fake.detach())` in the D step.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/examples#116"
CATEGORY = "two-backwards"
CULPRIT = "fake"
CAUSE = "D's loss backward frees G's graph, which G's loss needs"
FIX_KIND = "detach-input"
ERROR = "second time"

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
netD = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
criterion = nn.BCEWithLogitsLoss()
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
real_label, fake_label = torch.ones(16, 1), torch.zeros(16, 1)

for step in range(3):
    real = torch.randn(16, 8)
    netD.zero_grad()
    errD_real = criterion(netD(real), real_label)
    errD_real.backward()
    noise = torch.randn(16, 4)
    fake = netG(noise)
    output = netD(fake)  # BUG
    # FIX: output = netD(fake.detach())
    errD_fake = criterion(output, fake_label)
    errD_fake.backward()
    optD.step()

    netG.zero_grad()
    errG = criterion(netD(fake), real_label)
    errG.backward()
    optG.step()
