"""Neural combinatorial optimization for the travelling salesman problem (encode-attend-navigate):
an actor samples a tour city by city, a separate critic (its own encoder) predicts the tour's
length; the actor is trained with REINFORCE using the critic as baseline, the critic by regression.

Rewritten from astariul/encode-attend-navigate-pytorch#3 ("Fix gradients & reproduce results"):
the trainer ran `loss1 = ((reward - critique) * log_probs).mean()`, `loss2 = F.mse_loss(reward,
critique)`, `loss1.backward(); loss2.backward()`, which fails the second time through the critic.
A first patch, "Add losses to have a single backward pass", stopped the error but let the actor's
loss train the critic; the PR: "Because critic values were not detached when computing policy loss,
the critic network was backpropagated from both the policy loss and critic loss, leading to
unstable training. This PR fix this problem (by detaching critic value before computing policy loss)".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "astariul/encode-attend-navigate-pytorch#3"
CATEGORY = "two-backwards"
CULPRIT = "critique"
CAUSE = "the policy loss backwards through the critic's prediction, freeing what the critic loss needs"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The policy loss (REINFORCE with the critic as baseline) trains only the actor; the critic's "
          "prediction is a constant baseline in it. The mean-squared error trains only the critic.")
GRADS = "agent.parameters()"

torch.manual_seed(0)
agent = nn.ModuleDict(dict(actor_encoder=nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16)),
                           query=nn.Linear(16, 16),
                           critic_encoder=nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16)),
                           critic=nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))))
optim = torch.optim.Adam(agent.parameters(), lr=1e-3)
for step in range(2):
    data = torch.rand(8, 6, 2)                                     # 8 instances of 6 cities
    optim.zero_grad()
    enc = agent["actor_encoder"](data)                             # actor: pointer decoding
    visited, current, tour, log_probs = torch.zeros(8, 6, dtype=torch.bool), enc.mean(dim=1), [], 0
    for _ in range(6):
        scores = (enc @ agent["query"](current).unsqueeze(-1)).squeeze(-1).masked_fill(visited, float("-inf"))
        dist = torch.distributions.Categorical(logits=scores)
        city = dist.sample()
        log_probs = log_probs + dist.log_prob(city)
        visited, current = visited | F.one_hot(city, 6).bool(), enc[torch.arange(8), city]
        tour.append(city)
    tour = torch.stack(tour + tour[:1], dim=1)                     # back to the first city
    critique = agent["critic"](agent["critic_encoder"](data).mean(dim=1)).squeeze(-1)
    ordered = torch.gather(data, 1, tour.unsqueeze(-1).expand(-1, -1, 2))
    reward = (ordered[:, 1:] - ordered[:, :-1]).norm(dim=-1).sum(dim=-1)   # tour length
    loss1 = ((reward - critique) * log_probs).mean()  # BUG
    # FIX: loss1 = ((reward - critique).detach() * log_probs).mean()
    loss2 = F.mse_loss(reward, critique)
    loss1.backward()
    loss2.backward()
    optim.step()
