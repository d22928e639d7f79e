"""Conservative Q-learning (CQL) for offline RL with the Lagrangian variant: the CQL gap (logsumexp
of Q over random and policy actions minus Q of the dataset actions) is weighted by a learned
multiplier alpha', which is tuned so that the gap stays near a target; the critic loss is the TD
error plus the weighted gap. Each loss has its own optimizer and its own backward.

Rewritten from ray-project/ray#16770 ("[RLlib] lagrangian parameter in rllib cql config"):
setting `config['lagrangian'] = True` raised "Trying to backward through the graph a second time";
the maintainer's answer: "If you change this line to retain_graph=True does it work for you?"
(as in the reference CQL code, `alpha_prime_loss.backward(retain_graph=True)`). The alpha' loss and
the critic loss share the Q-network's graph of this batch, so the first backward must keep it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "ray-project/ray#16770"
CATEGORY = "two-backwards"
CULPRIT = "cql_gap"
CAUSE = "the alpha' loss backward frees the Q-network graph the critic loss backwards next"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The alpha' loss trains only the Lagrange multiplier log_alpha_prime; the critic loss "
          "(TD error plus the alpha'-weighted CQL gap) trains the Q-network.")
GRADS = "qf.parameters()"  # log_alpha_prime.grad ends at zero: the critic loss adds back what the alpha' loss put there

torch.manual_seed(0)
obs_dim, act_dim, n_rand, target_gap, gamma = 6, 2, 4, 5.0, 0.99
qf = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
policy = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, act_dim), nn.Tanh())
log_alpha_prime = torch.zeros(1, requires_grad=True)
qf_opt = torch.optim.Adam(qf.parameters(), lr=3e-4)
alpha_prime_opt = torch.optim.Adam([log_alpha_prime], lr=3e-4)
for step in range(2):
    obs, act = torch.randn(8, obs_dim), torch.rand(8, act_dim) * 2 - 1
    rew, next_obs = torch.randn(8, 1), torch.randn(8, obs_dim)
    with torch.no_grad():
        td_target = rew + gamma * qf(torch.cat([next_obs, policy(next_obs)], 1))
    q_data = qf(torch.cat([obs, act], 1))
    obs_rep = obs.repeat_interleave(n_rand, 0)
    rand_act = torch.rand(8 * n_rand, act_dim) * 2 - 1
    with torch.no_grad():
        pi_act = policy(obs_rep)
    q_rand = qf(torch.cat([obs_rep, rand_act], 1)).view(8, n_rand)
    q_pi = qf(torch.cat([obs_rep, pi_act], 1)).view(8, n_rand)
    cql_gap = torch.logsumexp(torch.cat([q_rand, q_pi], 1), dim=1).mean() - q_data.mean()
    alpha_prime = log_alpha_prime.exp().clamp(0.0, 1e6)
    min_q_loss = alpha_prime * (cql_gap - target_gap)
    alpha_prime_loss = -min_q_loss
    alpha_prime_opt.zero_grad()
    alpha_prime_loss.backward()  # BUG
    # FIX: alpha_prime_loss.backward(retain_graph=True)
    alpha_prime_opt.step()
    qf_loss = F.mse_loss(q_data, td_target) + min_q_loss
    qf_opt.zero_grad()
    qf_loss.backward()
    qf_opt.step()
