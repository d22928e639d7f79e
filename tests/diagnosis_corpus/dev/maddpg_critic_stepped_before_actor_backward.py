"""MADDPG: each agent has an actor, and a centralised critic that scores the observations and
actions of all agents. One update computes the critic's TD loss and the actor's loss (minus the
critic's value of the actor's own action) from one sampled batch.

Rewritten from starry-sky6688/MADDPG#27 (in Chinese; title, translated: "when I update the critic
first and then the actor, as the paper does, it reports that an inplace operation made the gradient
update fail"): the repository updated the actor first; the reporter swapped the order, so
critic_optim.step() runs before actor_loss.backward(). The maintainer (translated) suggested moving
the critic's update up, because "actor_loss used critic_network to compute its gradient, but you then
updated critic_network, so in PyTorch's view the gradient on actor_loss is outdated". The fixed
program builds the actor loss again, through the critic as it is after its step.
"""
import torch
import torch.nn as nn

SOURCE = "starry-sky6688/MADDPG#27"
CATEGORY = "inplace"
CULPRIT = "critic.q_out.weight"
CAUSE = "the critic's optimizer step changes weights the actor loss saved"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The critic loss trains the centralised critic toward the TD target, and the actor loss trains this "
          "agent's actor through the value the updated critic gives its action.")
GRADS = ["actor.parameters()", "critic.parameters()"]


class Critic(nn.Module):
    def __init__(self, n_agents=2, obs_dim=6, act_dim=2):
        super().__init__()
        self.fc1 = nn.Linear(n_agents * (obs_dim + act_dim), 32)
        self.q_out = nn.Linear(32, 1)

    def forward(self, o, u):
        return self.q_out(torch.relu(self.fc1(torch.cat(o + u, dim=1))))


torch.manual_seed(0)
agent_id, gamma = 0, 0.95
actor, critic = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh()), Critic()
actor_optim = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-3)
for step in range(2):
    o = [torch.randn(16, 6) for _ in range(2)]
    u = [torch.rand(16, 2) * 2 - 1 for _ in range(2)]
    r, o_next = torch.randn(16, 1), [torch.randn(16, 6) for _ in range(2)]
    with torch.no_grad():                  # target networks omitted: the critic itself, no grad
        target_q = r + gamma * critic(o_next, [torch.tanh(x[:, :2]) for x in o_next])
    critic_loss = (target_q - critic(o, u)).pow(2).mean()
    u_new = list(u)
    u_new[agent_id] = actor(o[agent_id])
    actor_loss = -critic(o, u_new).mean()
    critic_optim.zero_grad()
    critic_loss.backward()
    critic_optim.step()
    actor_optim.zero_grad()
    actor_loss.backward()  # BUG
    # FIX: actor_loss = -critic(o, u_new).mean(); actor_loss.backward()
    actor_optim.step()
