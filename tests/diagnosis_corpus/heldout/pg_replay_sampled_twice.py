"""Policy-gradient updates that sample old experiences, stored with their graphs, from a deque.

Rewritten from pytorch/examples#151: to replay experiences the reporter called
`finish_episode()` more than once on randomly sampled stored steps and got "Trying to backward
through the graph second time". The maintainers' way (thu-ml/tianshou#397, Trinkle23897:
"You are storing data in the replay buffer, but without the gradient") is to store states and
actions without a graph and compute the log-probabilities again at update time.
"""
import random
from collections import deque

import torch
import torch.nn as nn

SOURCE = "pytorch/examples#151"
CATEGORY = "rl-buffer"
CULPRIT = "memory"
CAUSE = "stored log-probs keep graphs that an earlier update freed"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
random.seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
memory = deque(maxlen=100)
for episode in range(4):
    for t in range(10):
        state = torch.randn(4)
        dist = torch.distributions.Categorical(logits=policy(state))
        action = dist.sample()
        memory.append((dist.log_prob(action), state, action, float(action)))
    batch = random.sample(list(memory), 8)
    log_probs = torch.stack([lp for lp, s, a, r in batch])  # BUG
    # FIX: log_probs = torch.stack([torch.distributions.Categorical(logits=policy(s)).log_prob(a) for lp, s, a, r in batch])
    rewards = torch.tensor([r for lp, s, a, r in batch])
    loss = -(log_probs * (rewards - rewards.mean())).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
