"""REINFORCE with the log-probabilities kept on the policy, never cleared between episodes: the
second episode's loss runs into the first episode's freed graph. The list is not carried state
(no entry is made from an earlier one): detaching its old entries is not the fix, clearing it is."""
import torch
import torch.nn as nn

INTENT = "Each episode's loss trains the policy through that episode's log-probabilities only."
GRADS = "policy.parameters()"
RULE = "computed-once"
KIND = "reset-per-episode"
torch.manual_seed(0)
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
        self.saved_log_probs = []
    def act(self, s):
        dist = torch.distributions.Categorical(logits=self.net(s))
        a = dist.sample()
        self.saved_log_probs.append(dist.log_prob(a))
        return a
policy = Policy()
opt = torch.optim.Adam(policy.parameters(), 1e-2)
for _ in range(3):
    rewards = []
    for _t in range(5):
        policy.act(torch.randn(4))
        rewards.append(torch.rand(()).item())
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    loss = -(torch.stack(policy.saved_log_probs) * returns.repeat(len(policy.saved_log_probs) // 5)).sum()
    opt.zero_grad()
    loss.backward()  # BUG
    # FIX: loss.backward(); del policy.saved_log_probs[:]
    opt.step()
