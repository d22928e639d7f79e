"""Actor-critic with one shared body: the policy loss and the value loss backwarded one by one.

Rewritten from ikostrikov/pytorch-a3c#28 ("loss backward"): the repository calls
`(policy_loss + 0.5 * value_loss).backward()` once; as the answer explains, one backward of the
sum gives both heads (and the shared layers) their gradients.
"""
import torch
import torch.nn as nn

SOURCE = "ikostrikov/pytorch-a3c#28"
CATEGORY = "two-backwards"
CULPRIT = "x"
CAUSE = "both losses go through the shared body's graph of this step"
FIX_KIND = "retain-or-sum"
ERROR = "second time"


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.ELU())
        self.actor_linear, self.critic_linear = nn.Linear(32, 3), nn.Linear(32, 1)


torch.manual_seed(0)
model = ActorCritic()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for update in range(3):
    state = torch.randn(5, 6)
    x = model.body(state)
    logits, value = model.actor_linear(x), model.critic_linear(x).squeeze(1)
    R = torch.randn(5)
    advantage = R - value
    dist = torch.distributions.Categorical(logits=logits)
    policy_loss = -(dist.log_prob(dist.sample()) * advantage.detach()).mean()
    value_loss = 0.5 * advantage.pow(2).mean()
    optimizer.zero_grad()
    policy_loss.backward()  # BUG
    # FIX: policy_loss.backward(retain_graph=True)
    (0.5 * value_loss).backward()
    optimizer.step()
