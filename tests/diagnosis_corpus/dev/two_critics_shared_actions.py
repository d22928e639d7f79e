"""Two critics, two optimizers, and one batch of policy actions made once for both critic losses.

Rewritten from yihaosun1124/OfflineRL-Kit#15 ("[Question]: Why critic1's update needs
retain_graph=True in combo.py?"): without `retain_graph=True` on critic1's backward, critic2's
backward raises "second time"; the two losses share an intermediate tensor. The repository keeps
`critic1_loss.backward(retain_graph=True)`.
"""
import torch
import torch.nn as nn

SOURCE = "yihaosun1124/OfflineRL-Kit#15"
CATEGORY = "two-backwards"
CULPRIT = "pi_actions"
CAUSE = "both critic losses use the actor's actions made once in this step"
FIX_KIND = "retain-or-sum"
ERROR = "second time"

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
critic1 = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
critic2 = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
critic1_optim = torch.optim.Adam(critic1.parameters(), lr=3e-4)
critic2_optim = torch.optim.Adam(critic2.parameters(), lr=3e-4)
for step in range(2):
    obss, actions, target_q = torch.randn(8, 4), torch.rand(8, 2) * 2 - 1, torch.randn(8, 1)
    pi_actions = actor(obss)
    q1, q2 = critic1(torch.cat([obss, actions], 1)), critic2(torch.cat([obss, actions], 1))
    q1_pi, q2_pi = critic1(torch.cat([obss, pi_actions], 1)), critic2(torch.cat([obss, pi_actions], 1))
    critic1_loss = ((q1 - target_q) ** 2).mean() + (q1_pi.logsumexp(0) - q1.mean()).mean()
    critic2_loss = ((q2 - target_q) ** 2).mean() + (q2_pi.logsumexp(0) - q2.mean()).mean()
    critic1_optim.zero_grad()
    critic1_loss.backward()  # BUG
    # FIX: critic1_loss.backward(retain_graph=True)
    critic1_optim.step()
    critic2_optim.zero_grad()
    critic2_loss.backward()
    critic2_optim.step()
