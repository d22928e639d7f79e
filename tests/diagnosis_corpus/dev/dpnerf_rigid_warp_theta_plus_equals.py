"""DP-NeRF, a NeRF trained on blurry images: for each training ray a small MLP predicts rigid camera
motions (an axis-angle rotation per blur kernel position), the warped rays are rendered by the NeRF,
and the blurry pixel is the average of their colours.

Rewritten from dogyoonlee/DP-NeRF#2 ("loss.backward() error"): `loss.backward()` raised "one of the
variables needed for gradient computation has been modified by an inplace operation: [...] which is
output 0 of LinalgVectorNormBackward0, is at version 1; expected version 0". The reporter found the
line in rigid_warping.py: "modify `theta += 1.0e-10` to `theta = theta + 1.0e-10`"; the maintainer
answered "I will fix that part of the code". The angle `theta` is the output of `torch.norm`, whose
backward needs that output; adding the epsilon in place overwrites it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "dogyoonlee/DP-NeRF#2"
CATEGORY = "inplace"
CULPRIT = "theta"
CAUSE = "the rotation angle from torch.norm gets its epsilon added in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The photometric loss on the blurry pixels trains both the NeRF and the rigid-motion MLP "
          "that predicts each ray's blur kernel rotations.")
GRADS = ["nerf.parameters()", "motion_mlp.parameters()"]

def skew(w):
    x, y, z, o = w[..., 0], w[..., 1], w[..., 2], torch.zeros_like(w[..., 0])
    return torch.stack([o, -z, y, z, o, -x, -y, x, o], -1).unflatten(-1, (3, 3))

def render(nerf, rays_o, rays_d, n_samples=8):
    t = torch.linspace(0.1, 1.0, n_samples)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * t[:, None]
    raw = nerf(pts)
    alpha = 1 - torch.exp(-F.softplus(raw[..., 3]) * 0.5)
    weights = alpha * torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1 - alpha[..., :-1] + 1e-10], -1), -1)
    return (weights[..., None] * torch.sigmoid(raw[..., :3])).sum(-2)

torch.manual_seed(0)
nerf = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))
motion_mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3 * 4))   # 4 kernel positions
ray_embedding = torch.randn(16, 8)
optimizer = torch.optim.Adam(list(nerf.parameters()) + list(motion_mlp.parameters()), lr=5e-4)
for it in range(2):
    idx = torch.randint(0, 16, (6,))
    rays_o, rays_d, target = torch.randn(6, 3) * 0.1, F.normalize(torch.randn(6, 3), dim=-1), torch.rand(6, 3)
    w = motion_mlp(ray_embedding[idx]).view(6, 4, 3) * 0.05
    theta = torch.norm(w, dim=-1)
    theta += 1.0e-10  # BUG
    # FIX: theta = theta + 1.0e-10
    K = skew(w / theta[..., None])
    R = torch.eye(3) + torch.sin(theta)[..., None, None] * K + (1 - torch.cos(theta))[..., None, None] * K @ K
    warped_d = (R @ rays_d[:, None, :, None]).squeeze(-1)
    rgb_blur = render(nerf, rays_o[:, None].expand(-1, 4, -1), warped_d).mean(1)
    loss = F.mse_loss(rgb_blur, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
