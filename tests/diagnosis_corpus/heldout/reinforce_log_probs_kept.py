"""REINFORCE whose list of saved log-probabilities is never emptied between episodes.

Rewritten from sweetice/Deep-reinforcement-learning-with-pytorch#37 ("bug in reinforce with
baseline"): the episode end cleared the wrong lists; the fix given in the thread is
`del policy.saved_log_probs[:]` and `del policy.rewards[:]` after each update. Each episode here
is 20 steps long, so the list holds more than 16 entries when the error comes.
"""
import torch
import torch.nn as nn

SOURCE = "sweetice/Deep-reinforcement-learning-with-pytorch#37"
CATEGORY = "rl-buffer"
CULPRIT = "policy.saved_log_probs"
CAUSE = "log-probs of the previous episode stay in the list and join the next loss"
FIX_KIND = "reset-per-episode"
ERROR = "second time"


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, state):
        return torch.softmax(self.net(state), dim=-1)


torch.manual_seed(0)
policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(3):
    for t in range(20):
        m = torch.distributions.Categorical(policy(torch.randn(4)))
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        policy.rewards.append(float(action))
    R, returns = 0.0, []
    for r in reversed(policy.rewards):
        R = r + 0.99 * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    policy_loss = torch.stack([-lp * R for lp, R in zip(policy.saved_log_probs, returns)]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]  # BUG
    # FIX: del policy.rewards[:]; del policy.saved_log_probs[:]
