"""A GAN tutorial on MNIST-sized vectors: a fully connected generator and a discriminator whose
hidden layers are LeakyReLU followed by Dropout, both built with `inplace=True`.

Rewritten from dreamgonfly/GAN-tutorial#1 ("Train Backward 과정에서 오류"): `D_loss.backward()`
raises "one of the variables needed for gradient computation has been modified by an inplace
operation". The answer in the thread: remove `inplace = True`, the parameter of LeakyReLU and
Dropout, in the Generator and Discriminator classes ("LeakyReLU와 Dropout의 parameter인
inplace = True를 모두 지우면 됩니다"). The in-place LeakyReLU keeps its own output for its
backward, and the in-place Dropout right after it multiplies that very output by its mask.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "dreamgonfly/GAN-tutorial#1"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "an in-place Dropout overwrites the output an in-place LeakyReLU saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The discriminator loss trains the discriminator on real and detached generated images; "
          "the generator loss trains the generator through the discriminator's judgement.")
GRADS = ["G.parameters()", "D.parameters()"]

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(16, 64), nn.LeakyReLU(0.2, inplace=True), nn.Linear(64, 49), nn.Tanh())
D = nn.Sequential(
    nn.Linear(49, 32),
    nn.LeakyReLU(0.2, inplace=True), nn.Dropout(0.3, inplace=True),  # BUG
    # FIX: nn.LeakyReLU(0.2), nn.Dropout(0.3),
    nn.Linear(32, 1), nn.Sigmoid())
D_optimizer, G_optimizer = torch.optim.Adam(D.parameters(), lr=2e-4), torch.optim.Adam(G.parameters(), lr=2e-4)
for step in range(2):
    x_real, z = torch.rand(8, 49) * 2 - 1, torch.randn(8, 16)
    ones, zeros = torch.ones(8, 1), torch.zeros(8, 1)
    x_fake = G(z)
    D_loss = F.binary_cross_entropy(D(x_real), ones) + F.binary_cross_entropy(D(x_fake.detach()), zeros)
    D.zero_grad()
    D_loss.backward()
    D_optimizer.step()
    G_loss = F.binary_cross_entropy(D(x_fake), ones)
    G.zero_grad()
    G_loss.backward()
    G_optimizer.step()
