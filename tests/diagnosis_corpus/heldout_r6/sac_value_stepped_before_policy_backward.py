"""Soft actor-critic with a learned temperature (one step updates log(alpha), the policy, two Q nets).
Rewritten from mimoralea/gdrl#13 ("For the records who faced inplace operation error."): with
PyTorch >= 1.5 the SAC example's optimize_model raises the in-place error: the policy loss is built
through the online Q networks, both Q networks step, and only then is the policy loss backwarded. The
fix quoted in the thread "requires to correct the optimization process": alpha loss and step, then the
policy loss, backwarded and stepped at once, before the Q losses are computed and stepped.
"""
import torch
import torch.nn as nn

SOURCE = "mimoralea/gdrl#13"
CATEGORY = "inplace"
CULPRIT = "online_value_model_b[2].weight"
CAUSE = "the Q networks step before the policy loss backwards through them"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The alpha loss trains only log(alpha), the policy loss trains the policy through both online Q networks "
          "as they are before their update, and each Q loss trains its own Q network toward the soft target.")
GRADS = ["logalpha", "policy.parameters()", "online_value_model_a.parameters()", "online_value_model_b.parameters()"]


def q_net(hidden):                           # Q(s, a) on the concatenated state and action
    return nn.Sequential(nn.Linear(5, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def full_pass(s):                            # tanh-squashed Gaussian: action and its log-probability
    (mean, log_std), noise = policy(s).chunk(2, 1), torch.randn(s.shape[0], 2)
    pre = mean + log_std.clamp(-5, 2).exp() * noise
    logpi = (-0.5 * noise ** 2 - log_std.clamp(-5, 2) - torch.log(1 - torch.tanh(pre) ** 2 + 1e-6)).sum(1, keepdim=True)
    return torch.tanh(pre), logpi


def update(optimizer, loss):
    optimizer.zero_grad(), loss.backward(), optimizer.step()


torch.manual_seed(0)
policy, target_entropy, gamma = nn.Linear(3, 4), -2.0, 0.99
online_value_model_a, online_value_model_b, target_value_model = q_net(16), q_net(12), q_net(16)
logalpha = torch.zeros(1, requires_grad=True)
alpha_optimizer, policy_optimizer = torch.optim.Adam([logalpha], lr=1e-3), torch.optim.Adam(policy.parameters(), lr=1e-3)
value_optimizer_a, value_optimizer_b = (torch.optim.Adam(m.parameters(), lr=1e-3)
                                        for m in (online_value_model_a, online_value_model_b))
for step in range(2):
    states, actions, rewards, next_states = torch.randn(8, 3), torch.rand(8, 2) * 2 - 1, torch.randn(8, 1), torch.randn(8, 3)
    current_actions, logpi_s = full_pass(states)
    update(alpha_optimizer, -(logalpha * (logpi_s + target_entropy).detach()).mean())
    alpha = logalpha.exp()
    s_pi, s_a = torch.cat([states, current_actions], 1), torch.cat([states, actions], 1)
    current_q_sa = torch.min(online_value_model_a(s_pi), online_value_model_b(s_pi))
    policy_loss = (alpha * logpi_s - current_q_sa).mean()  # BUG
    # FIX: policy_loss = (alpha * logpi_s - current_q_sa).mean(); update(policy_optimizer, policy_loss)
    with torch.no_grad():
        ap, logpi_sp = full_pass(next_states)
        target_q_sa = rewards + gamma * (target_value_model(torch.cat([next_states, ap], 1)) - alpha * logpi_sp)
    update(value_optimizer_a, (online_value_model_a(s_a) - target_q_sa).pow(2).mul(0.5).mean())
    update(value_optimizer_b, (online_value_model_b(s_a) - target_q_sa).pow(2).mul(0.5).mean())
    update(policy_optimizer, policy_loss)  # BUG
    # FIX: pass
