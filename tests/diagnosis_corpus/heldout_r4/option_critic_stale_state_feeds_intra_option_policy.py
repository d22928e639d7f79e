"""Option-critic (hierarchical RL): a shared feature network gives the state, read by the option
values Q, the terminations and the intra-option policies. Each environment step draws the action
from the current option's policy on `state`, recomputes `state` from the next observation, then
backwards and steps the actor loss (termination loss plus the policy-gradient term).

Rewritten from lweitkamp/option-critic-pytorch#9 ("loss.backward error": "one of the variables needed
for gradient computation has been modified by an inplace operation"). The maintainer: "The issue
ended up being how I access the state variable which is a PyTorch tensor. The latest commit fixes the
issue!": `get_action` became `logits = state.data @ self.options_W[option] + self.options_b[option]`.
`state` was computed before the previous `optim.step()`, so the log-prob's graph reached the feature
weights as they were before that step; the log-prob trains the intra-option heads only."""
import torch
import torch.nn as nn
from torch.distributions import Categorical

SOURCE = "lweitkamp/option-critic-pytorch#9"
CATEGORY = "inplace"
CULPRIT = "option_critic.features[2].weight"
CAUSE = "the action's log-prob reaches features computed before the last optimizer step"
FIX_KIND = "detach-at-use"
ERROR = "inplace"
INTENT = ("The policy-gradient term trains the intra-option policy heads only, and the termination loss "
          "trains the feature network and the termination head through this step's recomputed state.")
GRADS = ["option_critic.options_W", "option_critic.features.parameters()", "option_critic.terminations.parameters()"]


class OptionCriticFeatures(nn.Module):
    def __init__(self, in_features=6, num_actions=3, num_options=2, hidden=8):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(in_features, 16), nn.ReLU(), nn.Linear(16, hidden), nn.ReLU())
        self.Q, self.terminations = nn.Linear(hidden, num_options), nn.Linear(hidden, num_options)
        self.options_W = nn.Parameter(torch.randn(num_options, hidden, num_actions) * 0.1)
        self.options_b = nn.Parameter(torch.zeros(num_options, num_actions))

    def get_action(self, state, option):
        logits = state @ self.options_W[option] + self.options_b[option]  # BUG
        # FIX: logits = state.data @ self.options_W[option] + self.options_b[option]
        action = (dist := Categorical(logits=logits)).sample()
        return action, dist.log_prob(action), dist.entropy()


torch.manual_seed(0)
option_critic = OptionCriticFeatures()
optim = torch.optim.RMSprop(option_critic.parameters(), lr=1e-3)
obs, option = torch.randn(6), 0
state = option_critic.features(obs)
for step in range(3):
    action, logp, entropy = option_critic.get_action(state, option)
    next_obs, reward = torch.randn(6), torch.randn(())      # env.step(action)
    state = option_critic.features(next_obs)
    cur_state = option_critic.features(obs)                 # actor_loss_fn recomputes from obs
    Q, next_Q = option_critic.Q(cur_state).detach(), option_critic.Q(state).detach()
    termination_loss = option_critic.terminations(cur_state).sigmoid()[option] * (Q[option] - Q.max() + 0.01)
    policy_loss = -logp * (reward + 0.99 * next_Q.max() - Q[option]) - 0.01 * entropy
    optim.zero_grad()
    (termination_loss + policy_loss).backward()
    optim.step()
    obs = next_obs
