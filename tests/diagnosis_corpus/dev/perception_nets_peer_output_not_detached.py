"""Two perception networks on one camera feature: an object tracker and an ego-path estimator,
each with its own optimizer and loss, and each loss also asks its output to agree with the
other network's output.

Rewritten from the PyTorch forum thread "Multiple Networks Multiple Losses": the poster asks
whether `L1.backward(); Opt1.step(); L2.backward(); Opt2.step()` is right when NN1 and NN2 are
inter-dependent through Out1 and Out2. The answer: `L1.backward()` sends gradients through both
networks because L1 takes both outputs; "if L1 should not flow through NN2, out2 should be
detached from the computational graph and used as a constant in the loss calculation" (and out1
in L2). Without it, `L2.backward()` meets the part of the graph `L1.backward()` freed; with
`L1.backward(retain_graph=True)` instead, it meets NN1's weights changed by `opt1.step()` (the
in-place error, checked on torch 2.13).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Multiple Networks Multiple Losses"
CATEGORY = "two-backwards"
CULPRIT = "out2"
CAUSE = "L1 backwards through NN2's output and frees it before L2's backward"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("L1 trains only NN1 and L2 trains only NN2: in each loss the other network's output is a "
          "constant to agree with.")
GRADS = ["nn1.parameters()", "nn2.parameters()"]

torch.manual_seed(0)
backbone_feats = torch.randn(16, 12)
nn1 = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
nn2 = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
opt1, opt2 = torch.optim.Adam(nn1.parameters(), lr=1e-3), torch.optim.Adam(nn2.parameters(), lr=1e-3)
for step in range(2):
    track_target, path_target = torch.randn(16, 4), torch.randn(16, 4)
    out1, out2 = nn1(backbone_feats), nn2(backbone_feats)
    L1 = F.mse_loss(out1, track_target) + 0.1 * F.mse_loss(out1, out2)  # BUG
    # FIX: L1 = F.mse_loss(out1, track_target) + 0.1 * F.mse_loss(out1, out2.detach())
    L2 = F.mse_loss(out2, path_target) + 0.1 * F.mse_loss(out2, out1)  # BUG
    # FIX: L2 = F.mse_loss(out2, path_target) + 0.1 * F.mse_loss(out2, out1.detach())
    opt1.zero_grad()
    L1.backward()
    opt1.step()
    opt2.zero_grad()
    L2.backward()
    opt2.step()
