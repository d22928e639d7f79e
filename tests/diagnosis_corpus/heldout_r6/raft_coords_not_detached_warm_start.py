"""RAFT-style optical flow on a video: for each pair of consecutive frames, an all-pairs correlation
volume is looked up around the current coordinates, a recurrent update block predicts a flow
increment, and the coordinates are refined for several iterations; the sequence loss weighs every
iteration's flow. Each pair starts from the previous pair's flow (warm start).

Rewritten from princeton-vl/RAFT#116 ("about detaching"): "I find that you detach coords before
sampling. Is there any specific reason about this design choice?" The maintainer: "calling .detach()
is quite important. Results are worse if this is not done and training less stable. This
implementation detail is mentioned in Sec. 4 of our paper" (raft.py: `coords1 = coords1.detach()`
before `corr = corr_fn(coords1)`). Without it, the coordinates carried in from the previous pair's
warm start keep that pair's graph, freed by its backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "princeton-vl/RAFT#116"
CATEGORY = "carried-state"
CULPRIT = "flow_init"
CAUSE = "coordinates not detached before the lookup carry the previous pair's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The sequence loss trains the feature encoders and the update block through each iteration's own flow "
          "increment; the coordinates carried into an iteration, warm start included, are constants.")
GRADS = ["fnet.parameters()", "cnet.parameters()", "update_block.parameters()", "flow_head.parameters()"]


def corr_fn(corr_volume, coords, r=1):
    """Look up the correlation volume (B*H*W, 1, H, W) in a (2r+1)^2 window around coords (B, 2, H, W)."""
    B, _, H, W = coords.shape
    d = torch.stack(torch.meshgrid(torch.arange(-r, r + 1.0), torch.arange(-r, r + 1.0), indexing="xy"), -1).view(1, -1, 1, 2)
    centre = coords.permute(0, 2, 3, 1).reshape(B * H * W, 1, 1, 2) + d
    grid = torch.stack([2 * centre[..., 0] / (W - 1) - 1, 2 * centre[..., 1] / (H - 1) - 1], -1)
    return F.grid_sample(corr_volume, grid, align_corners=True).view(B, H, W, -1).permute(0, 3, 1, 2)


torch.manual_seed(0)
H = W = 6
fnet, cnet = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 16, 3, padding=1)
update_block, flow_head = nn.Conv2d(8 + 8 + 9 + 2, 8, 3, padding=1), nn.Conv2d(8, 2, 3, padding=1)
optimizer = torch.optim.AdamW([p for m in (fnet, cnet, update_block, flow_head) for p in m.parameters()], lr=4e-4)
frames, flows_gt = torch.randn(3, 1, 3, H, W), torch.randn(2, 1, 2, H, W)
coords0 = torch.stack(torch.meshgrid(torch.arange(W * 1.0), torch.arange(H * 1.0), indexing="xy"), 0)[None]
flow_init = torch.zeros(1, 2, H, W)
for pair in range(2):
    fmap1, fmap2 = fnet(frames[pair]), fnet(frames[pair + 1])
    corr_volume = torch.einsum("bchw,bcuv->bhwuv", fmap1, fmap2).reshape(H * W, 1, H, W) / 8 ** 0.5
    net, inp = torch.tanh(cnet(frames[pair])).chunk(2, 1)
    coords1, flow_predictions = coords0 + flow_init, []
    for itr in range(4):
        corr = corr_fn(corr_volume, coords1)  # BUG
        # FIX: coords1 = coords1.detach(); corr = corr_fn(corr_volume, coords1)
        net = torch.tanh(update_block(torch.cat([net, inp, corr, coords1 - coords0], 1)))
        coords1 = coords1 + flow_head(net)
        flow_predictions.append(coords1 - coords0)
    loss = sum(0.8 ** (3 - i) * (f - flows_gt[pair]).abs().mean() for i, f in enumerate(flow_predictions))
    optimizer.zero_grad(), loss.backward(), optimizer.step()
    flow_init = coords1 - coords0                       # warm start for the next pair
