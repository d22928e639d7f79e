"""An unrolled refinement network for a stream of frames: a small net updates an estimate four times
per frame from the frame and the current estimate, and the last estimate starts the next frame (the
frames move slowly). Every pass is supervised. Training crashes at the second frame."""
import torch
import torch.nn as nn

INTENT = ("Each pass's loss trains the update network through that pass's own update only: the estimate a "
          "pass starts from, including the one carried over from the previous frame, is a constant.")
GRADS = "update.parameters()"
RULE = "carried-across-steps"
KIND = "detach-carried"

torch.manual_seed(0)
update = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 8))
opt = torch.optim.Adam(update.parameters(), lr=1e-3)
frames, targets = torch.randn(3, 4, 8), torch.randn(3, 4, 8)
estimate = torch.zeros(4, 8)
for frame, target in zip(frames, targets):
    losses = []
    for _ in range(4):
        estimate = estimate + update(torch.cat([frame, estimate], 1))  # BUG
        # FIX: estimate = estimate.detach(); estimate = estimate + update(torch.cat([frame, estimate], 1))
        losses.append((estimate - target).pow(2).mean())
    loss = sum(losses)
    opt.zero_grad()
    loss.backward()
    opt.step()
