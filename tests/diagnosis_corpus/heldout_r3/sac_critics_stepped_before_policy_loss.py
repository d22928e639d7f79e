"""Soft actor-critic: one batch gives the policy loss (through both critics at the policy's fresh
actions) and the two critics' Bellman losses; then each network takes its optimizer step.

Rewritten from rail-berkeley/rlkit#109 ("Optimize actor before the critic", merged): "The actor should
be optimized first. Otherwise, the weights of the critic would have been changed when back
propagating the gradients for the actor. The latter will create an error in pytorch 1.5.0". The
trainer stepped qf1 and qf2 before the policy, so policy_loss.backward() met qf1's last weight
changed in place by its optimizer; the merge moves the policy's zero_grad/backward/step first.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "rail-berkeley/rlkit#109"
CATEGORY = "inplace"
CULPRIT = "qf1[2].weight"
CAUSE = "the critics' optimizer steps change their weights before the policy loss backward"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The policy loss trains only the policy, through both critics' values of its fresh actions; "
          "each critic's Bellman loss trains only that critic.")
GRADS = ["policy.parameters()", "qf1.parameters()", "qf2.parameters()"]

def mlp(n_in, n_out):
    return nn.Sequential(nn.Linear(n_in, 32), nn.ReLU(), nn.Linear(32, n_out))

def act(obs):                 # tanh-squashed Gaussian, reparameterised
    mean, log_std = policy(obs).chunk(2, -1)
    dist = torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp())
    pre = dist.rsample()
    log_pi = dist.log_prob(pre).sum(-1, keepdim=True) - torch.log(1 - torch.tanh(pre) ** 2 + 1e-6).sum(-1, keepdim=True)
    return torch.tanh(pre), log_pi

def update(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

torch.manual_seed(0)
policy, qf1, qf2, target_qf1, target_qf2 = mlp(6, 4), mlp(8, 1), mlp(8, 1), mlp(8, 1), mlp(8, 1)
policy_opt, qf1_opt, qf2_opt = (torch.optim.Adam(m.parameters(), lr=3e-4) for m in (policy, qf1, qf2))
alpha, gamma = 0.2, 0.99
for it in range(2):
    obs, actions, rewards, next_obs = torch.randn(16, 6), torch.rand(16, 2) * 2 - 1, torch.randn(16, 1), torch.randn(16, 6)
    new_actions, log_pi = act(obs)
    q_new = torch.min(qf1(torch.cat([obs, new_actions], 1)), qf2(torch.cat([obs, new_actions], 1)))
    policy_loss = (alpha * log_pi - q_new).mean()
    q1_pred, q2_pred = qf1(torch.cat([obs, actions], 1)), qf2(torch.cat([obs, actions], 1))
    next_actions, next_log_pi = act(next_obs)
    target_q = torch.min(target_qf1(torch.cat([next_obs, next_actions], 1)), target_qf2(torch.cat([next_obs, next_actions], 1)))
    q_target = rewards + gamma * (target_q - alpha * next_log_pi)
    qf1_loss, qf2_loss = F.mse_loss(q1_pred, q_target.detach()), F.mse_loss(q2_pred, q_target.detach())
    update(qf1_opt, qf1_loss)  # BUG
    # FIX: update(policy_opt, policy_loss)
    update(qf2_opt, qf2_loss)  # BUG
    # FIX: update(qf1_opt, qf1_loss)
    update(policy_opt, policy_loss)  # BUG
    # FIX: update(qf2_opt, qf2_loss)
