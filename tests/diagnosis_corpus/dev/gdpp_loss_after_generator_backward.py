"""A GAN generator step with the GDPP diversity loss (pytorch_GAN_zoo's BaseGAN): the
discriminator returns both its score and its features phi; the adversarial loss is backwarded,
then `GDPPLoss` compares the eigen-structure of fake and real features and backwards itself.
Rewritten from facebookresearch/pytorch_GAN_zoo#83 ("I can't using GDPP config train any
model"): "Trying to backward through the graph a second time"; the poster: after "backward
lossGFake the compute graph has been released", so the GDPP backward finds nothing to compute.
A maintainer: "Doing the backward in different places doesn't change the loss." The merged fix
(#85): "set lossGFake.backward(retain_graph=True) to enable GDPP loss for training".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "facebookresearch/pytorch_GAN_zoo#83"
CATEGORY = "two-backwards"
CULPRIT = "phiGFake"
CAUSE = "the adversarial loss's backward frees the graph the GDPP loss backwards through"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("Both the adversarial loss and the GDPP diversity loss train the generator in the same "
          "step, their gradients adding up; the discriminator is not stepped here.")
GRADS = "netG.parameters()"

class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk, self.head = nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU(0.2)), nn.Linear(16, 1)
    def forward(self, x, getFeature=False):
        phi = self.trunk(x)
        return (self.head(phi), phi) if getFeature else self.head(phi)

def GDPPLoss(phiFake, phiReal, backward=True):
    def compute_diversity(phi):
        phi = F.normalize(phi, p=2, dim=1)
        return torch.linalg.eigh(phi @ phi.t())          # torch.symeig(SB, eigenvectors=True) then
    fakeEigVals, fakeEigVecs = compute_diversity(phiFake)
    realEigVals, realEigVecs = compute_diversity(phiReal)
    magnitudeLoss = 0.0001 * F.mse_loss(target=realEigVals, input=fakeEigVals)
    structureLoss = -torch.sum(torch.mul(fakeEigVecs, realEigVecs), 0)
    normalizedRealEigVals = (realEigVals - realEigVals.min()) / (realEigVals.max() - realEigVals.min())
    gdppLoss = magnitudeLoss + torch.sum(torch.mul(normalizedRealEigVals, structureLoss))
    if backward:
        gdppLoss.backward(retain_graph=True)
    return gdppLoss.item()

torch.manual_seed(0)
netG, netD = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 12)), Discriminator()
optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.0, 0.99))
for step in range(2):
    real_input, inputNoise = torch.randn(6, 12), torch.randn(6, 4)
    optimizerG.zero_grad()
    predFakeG = netG(inputNoise)
    predFakeD, phiGFake = netD(predFakeG, True)
    lossGFake = F.binary_cross_entropy_with_logits(predFakeD, torch.ones_like(predFakeD))
    lossGFake.backward()  # BUG
    # FIX: lossGFake.backward(retain_graph=True)
    _, phiDReal = netD(real_input, True)
    GDPPLoss(phiDReal, phiGFake, backward=True)
    optimizerG.step()
