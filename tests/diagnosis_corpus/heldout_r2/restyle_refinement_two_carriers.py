"""ReStyle's iterative GAN inversion: at every refinement step the encoder sees the input image
next to the current reconstruction, predicts a residual on the current latent, the frozen
StyleGAN generator renders it, and the step's reconstruction loss is backwarded at once.

Rewritten from yuval-alaluf/restyle-encoder#15 ("RuntimeError: Trying to backward through the
graph a second time, but the saved intermediate results have already been freed..."); the
maintainer: "This occurs when you are trying to pass a variable multiple times through" the
network. The repository's loop (quoted in #33) feeds back
`y_hat_clone = y_hat.clone().detach().requires_grad_(True)` and
`latent_clone = latent.clone().detach().requires_grad_(True)`: both carriers are cut, and fixing
one alone still meets the graph the previous step's backward freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "yuval-alaluf/restyle-encoder#15"
CATEGORY = "carried-state"
CULPRIT = ["y_hat", "latent"]
CAUSE = "the previous step's reconstruction and latent are fed back with their graphs"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each refinement step's loss trains the encoder through that step only; the previous "
          "step's reconstruction and latent are inputs to refine, not something to train through.")
GRADS = "encoder.parameters()"

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(2 * 12, 32), nn.LeakyReLU(0.2), nn.Linear(32, 8))
decoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 12)).requires_grad_(False)   # pretrained
latent_avg = torch.randn(8)
avg_image = decoder(latent_avg)
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
n_iters_per_batch = 3
for batch_idx in range(2):
    x = torch.randn(4, 12)
    optimizer.zero_grad()
    y_hat, latent = avg_image.repeat(4, 1), latent_avg.repeat(4, 1)     # the first step starts from the average
    for iter in range(n_iters_per_batch):
        y_hat_clone = y_hat  # BUG
        # FIX: y_hat_clone = y_hat.clone().detach().requires_grad_(True)
        latent_clone = latent  # BUG
        # FIX: latent_clone = latent.clone().detach().requires_grad_(True)
        x_input = torch.cat([x, y_hat_clone], dim=1)
        latent = latent_clone + encoder(x_input)
        y_hat = decoder(latent)
        loss = F.mse_loss(y_hat, x) + 0.1 * F.mse_loss(latent, latent_avg.expand_as(latent))
        loss.backward()
    optimizer.step()
