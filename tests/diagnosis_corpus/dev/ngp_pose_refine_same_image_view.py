"""Instant-NGP NeRF with pose refinement (`--optimize_ext`: dR, dT per image), rays from one image per batch, mixed precision.
From kwea123/ngp_pl#100 ("Can't use --optimize_ext with --ray_sampling_strategy same_image"): "Trying to backward through
the graph a second time". Thread's fix: "Changing `img_idxs = np.random.choice(len(self.poses), 1)[0]` to `... 1)`". An int
index gives a view: `poses[..., :3] = dR @ poses[..., :3]` writes the graph into the stored poses buffer; an array, a copy."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "kwea123/ngp_pl#100"
CATEGORY = "carried-state"
CULPRIT = "system.poses"
CAUSE = "the pose correction is written through a view into the stored poses buffer"
FIX_KIND = "out-of-place"
ERROR = "second time"
INTENT = "The photometric loss trains the field and each image's dR, dT; the stored poses are data: untrained, no graph."
GRADS = "system.parameters()"


def axisangle_to_R(v):  # Rodrigues' formula
    theta = v.norm(dim=-1, keepdim=True).unsqueeze(-1) + 1e-8
    z = torch.zeros_like(v[..., 0])
    K = torch.stack([torch.stack([z, -v[..., 2], v[..., 1]], -1), torch.stack([v[..., 2], z, -v[..., 0]], -1),
                     torch.stack([-v[..., 1], v[..., 0], z], -1)], -2) / theta
    return torch.eye(3) + theta.sin() * K + (1 - theta.cos()) * K @ K


class NeRFSystem(nn.Module):
    def __init__(self, poses):
        super().__init__()
        self.register_buffer("poses", poses)  # (N_images, 3, 4) camera-to-world
        self.dR, self.dT = nn.Parameter(torch.zeros(len(poses), 3)), nn.Parameter(torch.zeros(len(poses), 3))
        self.field = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))
    def forward(self, img_idxs, directions):
        t = torch.linspace(2.0, 6.0, 8)
        poses = self.poses[img_idxs]
        poses[..., :3] = axisangle_to_R(self.dR[img_idxs]) @ poses[..., :3]
        poses[..., 3] += self.dT[img_idxs]
        rays_d = (directions @ poses[..., :3].mT).reshape(-1, 3)  # get_rays
        rays_o = poses[..., 3].unsqueeze(-2).expand(*poses.shape[:-2], len(directions), 3).reshape(-1, 3)
        out = self.field(rays_o[:, None] + rays_d[:, None] * t[None, :, None])
        alpha = 1 - torch.exp(-F.softplus(out[..., 0]) * (t[1] - t[0]))  # volume rendering
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha[:, :-1] + 1e-10], -1), -1)
        return ((alpha * trans)[..., None] * out[..., 1:].sigmoid()).sum(1)


torch.manual_seed(0)
n_images, n_rays = 4, 16
system = NeRFSystem(torch.cat([torch.eye(3).expand(n_images, 3, 3), torch.randn(n_images, 3, 1)], -1))
optimizer = torch.optim.Adam(system.parameters(), lr=1e-2)
images, directions = torch.rand(n_images, n_rays, 3), F.normalize(torch.randn(n_rays, 3) + torch.tensor([0, 0, 1.0]), dim=-1)
for step in range(3):
    img_idxs = torch.randint(n_images, (1,))[0]  # BUG
    # FIX: img_idxs = torch.randint(n_images, (1,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        rgb = system(img_idxs, directions)
    loss = F.mse_loss(rgb.float(), images[img_idxs].reshape(-1, 3))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
