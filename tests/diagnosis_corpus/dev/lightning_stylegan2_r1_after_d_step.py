"""StyleGAN2's discriminator step ported to a LightningModule (written out here as manual
optimization): the logistic loss and the lazy R1 penalty (the gradient of D's score on real images)
each get a backward and a step of the same discriminator optimizer, inside one training_step.

Rewritten from Lightning-AI/pytorch-lightning#2820 ("Do multiple optimizer steps in one training
step"): the poster computes d_loss and d_reg_loss up front, steps after d_loss, then backwards
d_reg_loss and gets "one of the variables needed for gradient computation has been modified by an
inplace operation". The maintainer (rohitgr7): "while calculating d_reg_loss in the first step itself
it's using the old discriminator weights W1 ... but while doing d_reg_loss.backward() the gradients
during backprop are calculated using new weights W2 since it's happening after the first
optimizer0.step()", and the workflow he gives computes it after the step: "5. d_reg_loss = #
calculate using updated discriminator".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Lightning-AI/pytorch-lightning#2820"
CATEGORY = "inplace"
CULPRIT = "discriminator[0].weight"
CAUSE = "the R1 penalty was built on weights the first discriminator step then changed"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The logistic loss and the R1 penalty both train the discriminator, each from its weights at the "
          "time of its own step; neither trains the generator.")
GRADS = ["discriminator[0].weight", "discriminator[2].weight"]


def d_r1_loss(discriminator, real, gamma=10.0):
    real = real.detach().requires_grad_(True)
    grad_real, = torch.autograd.grad(discriminator(real).sum(), real, create_graph=True)
    return gamma / 2 * grad_real.pow(2).sum(dim=1).mean()


torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 8))
discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
d_optim = torch.optim.SGD(discriminator.parameters(), lr=0.05)
for batch_idx in range(2):           # training_step(batch, batch_idx), automatic_optimization = False
    real = torch.randn(8, 8)
    fake = generator(torch.randn(8, 4)).detach()
    d_loss = F.softplus(discriminator(fake)).mean() + F.softplus(-discriminator(real)).mean()
    d_reg_loss = d_r1_loss(discriminator, real)
    d_optim.zero_grad()
    d_loss.backward()                # self.manual_backward(d_loss)
    d_optim.step()
    d_optim.zero_grad()
    d_reg_loss.backward()  # BUG
    # FIX: d_r1_loss(discriminator, real).backward()
    d_optim.step()
