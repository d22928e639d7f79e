"""MAPPO (pymarl2): one batch of episodes is used for several mini-epochs of PPO updates; each
update's loss is the clipped policy loss plus the critic's value loss, under one optimiser.

Rewritten from hijkzzz/pymarl2#46 ("MAPPO bug, trying to backward through the graph a second time."):
"The PPO/MAPPO code will crash if `mini_epochs` > 1", because the advantages are computed from the
critic's values outside the mini_epochs loop and reused inside it: the first update's backward frees
their graph. The reporter weighs detaching the advantages where they are used against retain_graph,
and concludes: "These advantages are only used to compute the actor loss ... so I think the first is
the right solution (and detaching them won't, e.g., prevent the critic from learning)". Retaining the
graph would also let the actor loss train the critic (and, after the first step, meets the critic's
changed weights).
"""
import torch
import torch.nn as nn
from torch.distributions import Categorical

SOURCE = "hijkzzz/pymarl2#46"
CATEGORY = "rl-buffer"
CULPRIT = "advantages"
CAUSE = "advantages computed from the critic once, reused in every mini-epoch"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The clipped policy loss trains only the agents' shared actor, with the advantages as constants, and "
          "the value loss trains only the centralised critic toward the returns.")
GRADS = ["actor.parameters()", "critic.parameters()"]

torch.manual_seed(0)
n_agents, obs_dim, n_actions, mini_epochs, eps_clip = 3, 6, 4, 2, 0.2
actor = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, n_actions))
critic = nn.Sequential(nn.Linear(n_agents * obs_dim, 32), nn.ReLU(), nn.Linear(32, 1))
optimiser = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=5e-4)
obs, state = torch.randn(20, n_agents, obs_dim), torch.randn(20, n_agents * obs_dim)
actions, rewards = torch.randint(0, n_actions, (20, n_agents)), torch.randn(20, 1)
returns = torch.stack([sum(0.99 ** k * rewards[t + k] for k in range(20 - t)) for t in range(20)])
with torch.no_grad():
    old_log_probs = Categorical(logits=actor(obs)).log_prob(actions)
advantages = (returns - critic(state)).expand(-1, n_agents)
for epoch in range(mini_epochs):
    log_probs = Categorical(logits=actor(obs)).log_prob(actions)
    ratios = torch.exp(log_probs - old_log_probs)
    surr1, surr2 = ratios * advantages, torch.clamp(ratios, 1 - eps_clip, 1 + eps_clip) * advantages  # BUG
    # FIX: surr1, surr2 = ratios * advantages.detach(), torch.clamp(ratios, 1 - eps_clip, 1 + eps_clip) * advantages.detach()
    pg_loss = -torch.min(surr1, surr2).mean()
    critic_loss = (critic(state) - returns).pow(2).mean()
    optimiser.zero_grad()
    (pg_loss + critic_loss).backward()
    optimiser.step()
