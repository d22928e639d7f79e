"""Two-stage inpainting: a coarse network fills the hole and a refinement network sharpens it; the
coarse network takes its own step on the first-stage L1 loss, then the total loss updates both.

Rewritten from wangyx240/High-Resolution-Image-Inpainting-GAN#7 ("This code is not runnable until
I reproduce the first_MaskL1Loss after backproping the first_MaskL1Loss"): trainer.py raises "one
of the variables needed for gradient computation has been modified by an inplace operation" at
the total loss, which still contains the first-stage loss. The poster: "after calling
first_MaskL1Loss.backward(retain_graph) and optimizer_g1.step(), the first_MaskL1Loss cannot be
further used in the above total loss"; the thread's fix runs the generator forward again after it.
"""
import torch
import torch.nn as nn

SOURCE = "wangyx240/High-Resolution-Image-Inpainting-GAN#7"
CATEGORY = "inplace"
CULPRIT = "coarse[2].weight"
CAUSE = "the coarse generator's step changes weights the retained total-loss graph still needs"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The first-stage L1 loss trains the coarse generator in its own step; the total loss then trains "
          "both stages, built from a forward through the coarse generator as it is after that step.")
GRADS = ["coarse.parameters()", "refine.parameters()", "discriminator.parameters()"]

torch.manual_seed(0)
coarse = nn.Sequential(nn.Linear(16, 32), nn.ELU(), nn.Linear(32, 16), nn.Sigmoid())
refine = nn.Sequential(nn.Linear(16, 24), nn.ELU(), nn.Linear(24, 16), nn.Sigmoid())
discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
perceptualnet = nn.Linear(16, 8).requires_grad_(False)   # a frozen VGG
optimizer_g1, optimizer_d = torch.optim.Adam(coarse.parameters(), lr=1e-4), torch.optim.Adam(discriminator.parameters(), lr=4e-4)
optimizer_g = torch.optim.Adam(list(coarse.parameters()) + list(refine.parameters()), lr=1e-4)


def generator(img, mask):
    first_out_wholeimg = img * (1 - mask) + coarse(img * (1 - mask)) * mask
    return first_out_wholeimg, img * (1 - mask) + refine(first_out_wholeimg) * mask


def generator_losses(first_out_wholeimg, second_out_wholeimg, img):
    first, second = (first_out_wholeimg - img).abs().mean(), (second_out_wholeimg - img).abs().mean()
    perceptual = (perceptualnet(second_out_wholeimg) - perceptualnet(img)).abs().mean()
    return first, second, -discriminator(second_out_wholeimg).mean() + perceptual


for batch_idx in range(2):
    img, mask = torch.rand(4, 16), (torch.rand(4, 16) > 0.6).float()
    first_out_wholeimg, second_out_wholeimg = generator(img, mask)
    optimizer_d.zero_grad()
    loss_D = torch.relu(1 - discriminator(img)).mean() + torch.relu(1 + discriminator(second_out_wholeimg.detach())).mean()
    loss_D.backward()
    optimizer_d.step()
    first_MaskL1Loss, second_MaskL1Loss, GAN_Loss = generator_losses(first_out_wholeimg, second_out_wholeimg, img)
    optimizer_g1.zero_grad()
    first_MaskL1Loss.backward(retain_graph=True)
    optimizer_g1.step()  # BUG
    # FIX: optimizer_g1.step(); first_MaskL1Loss, second_MaskL1Loss, GAN_Loss = generator_losses(*generator(img, mask), img)
    optimizer_g.zero_grad()
    loss = 0.5 * first_MaskL1Loss + second_MaskL1Loss + GAN_Loss
    loss.backward()
    optimizer_g.step()
