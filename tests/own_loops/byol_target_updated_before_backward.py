"""BYOL-style self-supervised training: the online network and its predictor learn to predict the
target network's projection of another view; the target is an exponential moving average of the
online network. The moving average is updated right after the forward, before the backward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The BYOL loss trains the online encoder and the predictor; the target encoder is not trained by it, "
          "only moved towards the online one after each step.")
GRADS = ["online.parameters()", "predictor.parameters()"]
RULE = "inplace-write"
KIND = "backward-before-step"

torch.manual_seed(0)
online = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))
target = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))
target.load_state_dict(online.state_dict())
predictor = nn.Linear(8, 8)
opt = torch.optim.Adam([*online.parameters(), *predictor.parameters()], lr=1e-3)


def update_target(tau=0.99):
    with torch.no_grad():
        for pt, po in zip(target.parameters(), online.parameters()):
            pt.mul_(tau).add_(po, alpha=1 - tau)


for _step in range(2):
    x = torch.randn(16, 12)
    v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
    p1 = F.normalize(predictor(online(v1)), dim=1)
    z2 = F.normalize(target(v2), dim=1)
    loss = 2 - 2 * (p1 * z2).sum(1).mean()
    update_target()  # BUG
    # FIX: pass
    opt.zero_grad()
    loss.backward()
    opt.step()  # BUG
    # FIX: opt.step(); update_target()
