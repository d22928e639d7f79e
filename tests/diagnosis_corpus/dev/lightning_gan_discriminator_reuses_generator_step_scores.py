"""PyTorch Lightning's basic GAN tutorial in manual optimization (`self.optimizers()`,
`self.manual_backward`), changed to generate the images once per step and to reuse the
discriminator's scores of them from the generator step in the discriminator step. Rewritten from
Lightning-AI/tutorials#357 ("Refactor basic GAN tutorial", merged): "I removed the repeated calls to
the generator ... trying `self.manual_backward(g_loss, retain_graph=True)` caused an error when
backpropagating on the discriminator loss because the generator weights changed (RuntimeError...".
The merged tutorial backwards g_loss alone and scores `self.discriminator(self.generated_imgs.detach())`
again in the discriminator step. Lightning's methods are reproduced; the loop stands in for `fit`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Lightning-AI/tutorials#357"
CATEGORY = "inplace"
CULPRIT = "model.generator[2].weight"
CAUSE = "the generator step updates weights the reused fake scores' graph still needs"
FIX_KIND = "detach-input"
ERROR = "inplace"
INTENT = ("The generator loss trains only the generator through the discriminator's scores of its "
          "images; the discriminator loss trains only the discriminator, on real and generated images.")
GRADS = ["model.generator.parameters()", "model.discriminator.parameters()"]
bce = F.binary_cross_entropy_with_logits


class GAN(nn.Module):  # stands in for L.LightningModule with self.automatic_optimization = False
    def __init__(self, latent_dim=4):
        super().__init__()
        self.latent_dim, self.automatic_optimization = latent_dim, False
        self.generator = nn.Sequential(nn.Linear(latent_dim, 16), nn.ReLU(), nn.Linear(16, 8))
        self.discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self._opts = [torch.optim.Adam(m.parameters(), lr=2e-4, betas=(0.5, 0.999)) for m in (self.generator, self.discriminator)]

    def optimizers(self):
        return self._opts
    def manual_backward(self, loss, **kwargs):
        loss.backward(**kwargs)
    def training_step(self, imgs, batch_idx):
        opt_g, opt_d = self.optimizers()
        self.generated_imgs = self.generator(torch.randn(imgs.shape[0], self.latent_dim))
        fake_scores = self.discriminator(self.generated_imgs)
        g_loss = bce(fake_scores, torch.ones_like(fake_scores))
        opt_g.zero_grad()
        self.manual_backward(g_loss, retain_graph=True)  # BUG
        # FIX: self.manual_backward(g_loss)
        opt_g.step()
        real_scores = self.discriminator(imgs)
        fake_scores = fake_scores  # BUG
        # FIX: fake_scores = self.discriminator(self.generated_imgs.detach())
        d_loss = (bce(real_scores, torch.ones_like(real_scores)) + bce(fake_scores, torch.zeros_like(fake_scores))) / 2
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()


torch.manual_seed(0)
model = GAN()
for batch_idx in range(2):
    model.training_step(torch.randn(16, 8) + 1.0, batch_idx)
