"""A GFlowNet on a small grid, trained with the trajectory-balance loss on trajectories sampled from
a replay buffer. The sampler records each trajectory's forward log-probs; the buffer concatenates new
trajectories with the ones it holds; with `on_policy` set, the loss uses the stored log-probs.

Rewritten from GFNOrg/torchgfn#87 ("fix torch error "Trying to backward through the graph a second
time ..."", merged by the maintainer): scripts/train.py wraps `replay_buffer.add(training_samples)` and
`replay_buffer.sample(...)` in `with torch.no_grad():`, so the buffer's `torch.cat` keeps the log-probs
as numbers, without the sampling graphs that earlier iterations' backward had freed."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "GFNOrg/torchgfn#87"
CATEGORY = "rl-buffer"
CULPRIT = "replay_buffer.log_probs"
CAUSE = "the replay buffer concatenates log-probs that keep earlier iterations' sampling graphs"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The trajectory-balance loss trains the log-partition logZ and the backward policy on replayed "
          "trajectories; their stored forward log-probs are recorded numbers, not trained through.")
GRADS = ["logZ", "pb.parameters()"]


class ReplayBuffer:                                     # Trajectories.extend is a torch.cat per field
    def __init__(self, capacity=16):
        self.capacity, self.states, self.actions, self.log_probs, self.log_rewards = capacity, None, None, None, None

    def add(self, *new):
        old = (self.states, self.actions, self.log_probs, self.log_rewards)
        self.states, self.actions, self.log_probs, self.log_rewards = (
            n if o is None else torch.cat([o, n])[-self.capacity:] for o, n in zip(old, new))

    def sample(self, n):
        idx = torch.randperm(len(self.actions))[:n]
        return self.states[idx], self.actions[idx], self.log_probs[idx], self.log_rewards[idx]


torch.manual_seed(0)
H, T = 4, 3                                             # grid side, steps per trajectory (right or up)
pf, pb = nn.Linear(2, 2), nn.Linear(2, 2)               # forward and backward policies on (x, y)
logZ = nn.Parameter(torch.zeros(()))
optimizer = torch.optim.Adam([logZ, *pf.parameters(), *pb.parameters()], lr=1e-2)
replay_buffer = ReplayBuffer()
for it in range(3):
    pos, states, actions, log_probs = torch.zeros(8, 2), [], [], 0
    for t in range(T):                                  # the sampler, recording log P_F
        dist = torch.distributions.Categorical(logits=pf(pos / H))
        a = dist.sample()
        states, actions, log_probs = states + [pos], actions + [a], log_probs + dist.log_prob(a)
        pos = pos + F.one_hot(a, 2).float()
    samples = (torch.stack(states + [pos], 1), torch.stack(actions, 1), log_probs, -((pos - 1.5) ** 2).sum(-1))
    replay_buffer.add(*samples)  # BUG
    # FIX: with torch.no_grad(): replay_buffer.add(*samples)
    s, a, log_pf, log_r = replay_buffer.sample(8)
    log_pb = F.log_softmax(pb(s[:, 1:] / H), -1).gather(-1, a[..., None]).squeeze(-1).sum(-1)
    loss = (logZ + log_pf - log_pb - log_r).pow(2).mean()   # trajectory balance, on_policy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
