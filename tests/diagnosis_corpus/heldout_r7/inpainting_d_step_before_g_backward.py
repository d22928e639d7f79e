"""Generative image inpainting (DeepFill v1 in PyTorch): a generator fills the masked hole, a
local discriminator judges the filled patch and a global one the whole image; in one iteration
the trainer's forward returns both losses in a dict, the discriminators' loss on the detached
result and the generator's adversarial term on the result itself.

Rewritten from daa233/generative-inpainting-pytorch#62 (the in-place error of #38 at
`losses['g'].backward()`, "is at version 6; expected version 5"). The answer that the poster
confirmed ("thanks! it worked", and later "it works well"): "Train.py Line 127
`trainer_module.optimizer_d.step()` modifies loss, so you need to" move it to the line before
`trainer_module.optimizer_g.step()`, after the generator loss's backward.
"""
import torch
import torch.nn as nn

SOURCE = "daa233/generative-inpainting-pytorch#62"
CATEGORY = "inplace"
CULPRIT = "trainer.globalD[2].weight"
CAUSE = "the discriminators' step runs before the generator loss's backward through them"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The discriminator loss trains the local and global discriminators and the generator loss trains the generator; "
          "in the thread's fix the discriminators' step, run after both backwards, also takes the generator loss's gradients.")
GRADS = ["trainer.netG.parameters()", "trainer.localD.parameters()", "trainer.globalD.parameters()"]


class Trainer(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = nn.Sequential(nn.Linear(32, 64), nn.ELU(), nn.Linear(64, 32))
        self.localD = nn.Sequential(nn.Linear(8, 12), nn.LeakyReLU(0.2), nn.Linear(12, 1))
        self.globalD = nn.Sequential(nn.Linear(32, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.optimizer_g = torch.optim.Adam(self.netG.parameters(), lr=1e-4)
        self.optimizer_d = torch.optim.Adam(list(self.localD.parameters()) + list(self.globalD.parameters()), lr=1e-4)

    def forward(self, x, mask, ground_truth):
        inpainted = self.netG(x * (1 - mask)) * mask + x * (1 - mask)
        d_fake = self.localD(inpainted.detach()[:, :8]).mean() + self.globalD(inpainted.detach()).mean()
        d_real = self.localD(ground_truth[:, :8]).mean() + self.globalD(ground_truth).mean()
        g_adv = -(self.localD(inpainted[:, :8]).mean() + self.globalD(inpainted).mean())
        return {"d": d_fake - d_real, "g": (inpainted - ground_truth).abs().mean() + 0.001 * g_adv}


torch.manual_seed(0)
trainer = Trainer()
for iteration in range(2):
    ground_truth, mask = torch.randn(4, 32), (torch.rand(4, 32) > 0.7).float()
    losses = trainer(ground_truth, mask, ground_truth)
    trainer.optimizer_d.zero_grad()
    losses["d"].backward()
    trainer.optimizer_d.step()  # BUG
    # FIX: pass
    trainer.optimizer_g.zero_grad()
    losses["g"].backward()
    trainer.optimizer_g.step()  # BUG
    # FIX: trainer.optimizer_d.step(); trainer.optimizer_g.step()
