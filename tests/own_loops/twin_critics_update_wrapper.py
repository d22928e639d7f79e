"""An actor with twin critics, each network updated through one helper `update(opt, loss)` that
zeroes, backwards and steps: both critics are stepped before the actor's loss, which reads both
critics' values, is backwarded. Two steps changed weights that loss saved: moving only the last one
is half a fix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The actor's loss trains only the actor, through both critics' values of its actions; each "
          "critic's regression loss trains only that critic.")
GRADS = ["actor.parameters()", "critic_a.parameters()", "critic_b.parameters()"]
RULE = "inplace-optimizer-step"
KIND = "backward-before-step"


def update(opt, loss):
    opt.zero_grad()
    loss.backward()
    opt.step()


torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
critic_a, critic_b = (nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)) for _ in range(2))
opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (actor, critic_a, critic_b)]
for _ in range(2):
    s, a, r = torch.randn(8, 4), torch.randn(8, 2), torch.randn(8, 1)
    sa = torch.cat([s, actor(s)], 1)
    actor_loss = -torch.min(critic_a(sa), critic_b(sa)).mean()
    loss_a = F.mse_loss(critic_a(torch.cat([s, a], 1)), r)
    loss_b = F.mse_loss(critic_b(torch.cat([s, a], 1)), r)
    update(opts[1], loss_a)  # BUG
    # FIX: update(opts[0], actor_loss)
    update(opts[2], loss_b)  # BUG
    # FIX: update(opts[1], loss_a)
    update(opts[0], actor_loss)  # BUG
    # FIX: update(opts[2], loss_b)
