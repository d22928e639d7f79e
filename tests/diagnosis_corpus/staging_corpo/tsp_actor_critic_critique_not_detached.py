"""Neural combinatorial optimization for the travelling salesman problem (encode-attend-navigate):
an actor (encoder + pointer decoder) samples a tour, a separate critic (its own encoder) predicts
the tour's length, the actor is trained with REINFORCE using the critic as baseline, and the
critic is regressed onto the observed length.

Rewritten from astariul/encode-attend-navigate-pytorch#3 ("Fix gradients & reproduce results",
fixing #2): the trainer computed `loss1 = ((reward - critique) * log_probs).mean()` and
`loss2 = F.mse_loss(reward, critique)` and ran `loss1.backward(); loss2.backward()`, which fails
with the "second time" error: loss1 already went back through the critic. The author's first
patch, "Add losses to have a single backward pass" (`(loss1 + loss2).backward()`), stopped the
error but trained the critic with the actor's loss; the PR explains "Because critic values were
not detached when computing policy loss, the critic network was backpropagated from both the
policy loss and critic loss, leading to unstable training. This PR fix this problem (by detaching
critic value before computing policy loss)": `loss1 = ((reward - critique).detach() * log_probs).mean()`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "astariul/encode-attend-navigate-pytorch#3"
CATEGORY = "two-backwards"
CULPRIT = "critique"
CAUSE = "the policy loss backwards through the critic's prediction, freeing the graph the critic loss needs"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The policy loss (REINFORCE with the critic as baseline) trains only the actor; the critic's "
          "prediction is a constant baseline in it. The mean-squared error trains only the critic.")
GRADS = "agent.parameters()"


def reward_fn(coords, tour):
    ordered = torch.gather(coords, 1, tour.unsqueeze(-1).expand(-1, -1, coords.size(-1)))
    return (ordered[:, 1:] - ordered[:, :-1]).norm(dim=-1).sum(dim=-1)


class Agent(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.actor_encoder = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.query = nn.Linear(hidden, hidden)
        self.critic_encoder = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.critic = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, coords):
        enc = self.actor_encoder(coords)
        batch, n, _ = coords.shape
        visited = torch.zeros(batch, n, dtype=torch.bool)
        current, tour, log_probs = enc.mean(dim=1), [], 0
        for _ in range(n):
            scores = (enc @ self.query(current).unsqueeze(-1)).squeeze(-1).masked_fill(visited, float("-inf"))
            dist = torch.distributions.Categorical(logits=scores)
            city = dist.sample()
            log_probs = log_probs + dist.log_prob(city)
            visited = visited | F.one_hot(city, n).bool()
            current = enc[torch.arange(batch), city]
            tour.append(city)
        tour.append(tour[0])                          # back to the first city
        critique = self.critic(self.critic_encoder(coords).mean(dim=1)).squeeze(-1)
        return torch.stack(tour, dim=1), critique, log_probs


torch.manual_seed(0)
agent = Agent()
optim = torch.optim.Adam(agent.parameters(), lr=1e-3)
for step in range(2):
    data = torch.rand(8, 6, 2)
    optim.zero_grad()
    tour, critique, log_probs = agent(data)
    reward = reward_fn(data, tour)
    loss1 = ((reward - critique) * log_probs).mean()  # BUG
    # FIX: loss1 = ((reward - critique).detach() * log_probs).mean()
    loss2 = F.mse_loss(reward, critique)
    loss1.backward()
    loss2.backward()
    optim.step()
