"""PPO (PPO-PyTorch): the old policy acts for an episode and a Memory object keeps the states,
actions, rewards and the log-probabilities of the actions taken; then the current policy is updated
for K epochs on that memory with the clipped surrogate loss, and copied into the old policy.

Rewritten from nikhilbarhate99/PPO-PyTorch#18 ("Ratio Calculation"): the reporter notes the old log-probs
are already detached where they are stacked, `torch.stack(memory.logprobs)...detach()`, and asks whether
the ratio should be detached instead. The maintainer: `old_logprobs` are already detached, but "we still
need the graph for back propagation through the ratios to update the policy". The rollout runs without
no_grad, so the stored log-probs carry the old policy's graph; stacked without the detach, the first
epoch's backward frees it and the second epoch meets it.
"""
import torch
import torch.nn as nn
from torch.distributions import Categorical

SOURCE = "nikhilbarhate99/PPO-PyTorch#18"
CATEGORY = "rl-buffer"
CULPRIT = "memory.logprobs"
CAUSE = "the rollout's stored log-probs keep the old policy's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The clipped surrogate loss and the value loss train only the current policy's actor and critic, over "
          "K epochs of one rollout; the old policy's stored log-probabilities are constants.")
GRADS = "policy.parameters()"


class Memory:
    def __init__(self):
        self.states, self.actions, self.logprobs, self.rewards = [], [], [], []


def actor_critic():
    return nn.ModuleDict(dict(actor=nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2), nn.Softmax(-1)),
                              critic=nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))))


torch.manual_seed(0)
policy, policy_old, memory, K_epochs, eps_clip = actor_critic(), actor_critic(), Memory(), 2, 0.2
policy_old.load_state_dict(policy.state_dict())
optimizer = torch.optim.Adam(policy.parameters(), lr=2e-3)
for t in range(8):                                      # one episode with the old policy
    state = torch.randn(4)
    dist = Categorical(policy_old['actor'](state)); action = dist.sample()  # noqa: E702
    memory.states.append(state), memory.actions.append(action), memory.logprobs.append(dist.log_prob(action))
    memory.rewards.append(float(action) - 0.5)
rewards = torch.tensor([sum(0.99 ** k * r for k, r in enumerate(memory.rewards[t:])) for t in range(8)])
rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-5)
old_states, old_actions = torch.stack(memory.states), torch.stack(memory.actions)
old_logprobs = torch.stack(memory.logprobs)  # BUG
# FIX: old_logprobs = torch.stack(memory.logprobs).detach()
for _ in range(K_epochs):
    dist = Categorical(policy['actor'](old_states))
    logprobs, state_values = dist.log_prob(old_actions), policy['critic'](old_states).squeeze(-1)
    ratios = torch.exp(logprobs - old_logprobs)
    advantages = rewards - state_values.detach()
    surr1, surr2 = ratios * advantages, torch.clamp(ratios, 1 - eps_clip, 1 + eps_clip) * advantages
    loss = -torch.min(surr1, surr2) + 0.5 * (state_values - rewards) ** 2 - 0.01 * dist.entropy()
    optimizer.zero_grad(), loss.mean().backward(), optimizer.step()
