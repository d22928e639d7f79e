"""An actor that acts on the state it computed at the end of the previous step (`state` is rebound
to the next observation's features before the backward): the policy loss reads the old state, made
with the features' weights before the last optimizer step changed them."""
import torch
import torch.nn as nn

INTENT = ("The policy loss trains only the policy head; the value loss trains the feature network and "
          "the value head through this step's features.")
GRADS = ["features.parameters()", "policy.parameters()", "value.parameters()"]
RULE = "inplace-optimizer-step"
KIND = "detach-at-use"

torch.manual_seed(0)
features = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
policy, value = nn.Linear(8, 2), nn.Linear(8, 1)
opt = torch.optim.Adam([*features.parameters(), *policy.parameters(), *value.parameters()], lr=1e-2)
obs = torch.randn(4)
state = features(obs)
for _ in range(3):
    logp = torch.log_softmax(policy(state), -1)[0]  # BUG
    # FIX: logp = torch.log_softmax(policy(state.detach()), -1)[0]
    next_obs, reward = torch.randn(4), torch.randn(())
    state = features(next_obs)
    value_loss = (value(features(obs)) - reward).pow(2).mean()
    policy_loss = -logp * reward
    opt.zero_grad()
    (value_loss + policy_loss).backward()
    opt.step()
    obs = next_obs
