"""Text-to-3D with score distillation (stable-dreamfusion): a small NeRF renders a view, a frozen
image encoder turns it into latents, and a frozen denoiser's noise residual is pushed into the
latents with `latents.backward(gradient=grad)` (the denoiser's Jacobian is omitted, so there is no
loss to autodiff). Regularizers on the same render, such as the entropy of the opacity, are then
backwarded before the one optimizer step.

Rewritten from ashawkey/stable-dreamfusion#126 ("custom function for single backward", merged): "There
are two backward in the code, thus the `retain_graph` flag is specified in the first backward". The
repository's README, on the SDS step: "call backward and set the grad now (need to retain graph since
we will call a second backward for the other losses later)"; the merged alternative makes it one
backward. Without retain_graph the regularizer's backward meets the render graph the SDS backward freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "ashawkey/stable-dreamfusion#126"
CATEGORY = "two-backwards"
CULPRIT = "weights_sum"
CAUSE = "the SDS backward frees the render graph the opacity regularizer needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The score-distillation gradient and the opacity-entropy regularizer both train the NeRF through the "
          "same rendered view, adding up before one step; the image encoder and the denoiser are frozen.")
GRADS = "nerf.parameters()"


def render(pts, delta=0.25):
    """Volume rendering of S samples on each of H*W rays: colour image and accumulated opacity."""
    out = nerf(pts)
    sigma, rgb = F.softplus(out[..., 0]), torch.sigmoid(out[..., 1:])
    alpha = 1 - torch.exp(-sigma * delta)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], -1), -1)[:, :-1]
    weights = alpha * trans
    image = (weights[..., None] * rgb).sum(1)
    return image.t().reshape(1, 3, 16, 16), weights.sum(1)


torch.manual_seed(0)
nerf = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))
vae_encoder = nn.Conv2d(3, 4, 8, stride=8).requires_grad_(False)
unet = nn.Conv2d(4, 4, 3, padding=1).requires_grad_(False)
optimizer = torch.optim.Adam(nerf.parameters(), lr=1e-3)
for it in range(2):
    origins, dirs = torch.randn(256, 1, 3), F.normalize(torch.randn(256, 1, 3), dim=-1)
    pred_rgb, weights_sum = render(origins + dirs * torch.linspace(0.5, 2.0, 6)[None, :, None])
    latents = vae_encoder(pred_rgb)
    with torch.no_grad():                        # the denoiser's Jacobian is omitted
        noise = torch.randn_like(latents)
        noise_pred = unet(latents + 0.5 * noise)
    grad = 0.02 * (noise_pred - noise)
    optimizer.zero_grad()
    latents.backward(gradient=grad)  # BUG
    # FIX: latents.backward(gradient=grad, retain_graph=True)
    alphas = weights_sum.clamp(1e-5, 1 - 1e-5)
    loss_entropy = (-alphas * torch.log2(alphas) - (1 - alphas) * torch.log2(1 - alphas)).mean()
    (1e-3 * loss_entropy).backward()
    optimizer.step()
