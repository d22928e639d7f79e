"""Fully parameterized quantile function (FQF) for distributional DQN: a fraction proposal net
proposes the quantile fractions from the state embedding, and the quantile nets value them. The
fraction loss (plus an entropy bonus) is stepped with its own RMSprop first, retaining the graph,
then the quantile loss with Adam.

Rewritten from toshikwa/fqf-iqn-qrdqn.pytorch#3 ("one of the variables needed for gradient
computation has been modified by an inplace operation", on torch 1.5 with FQF). The maintainer's
fix: "The cause of the problem is the entropy loss, which depends on the fraction network, and
networks other than the fraction network should never be trained on entropy loss." The fixed agent
computes the fractions from `state_embeddings.detach()` and backwards `quantile_loss` alone; before
it, the quantile update backwarded `quantile_loss + entropy_loss`, through the fraction net whose
weight `fraction_optim.step()` had just changed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "toshikwa/fqf-iqn-qrdqn.pytorch#3"
CATEGORY = "two-backwards"
CULPRIT = "fraction_net.weight"
CAUSE = "the quantile update backwards the entropy term through the stepped fraction net"
FIX_KIND = "detach-at-use"
ERROR = "inplace"
INTENT = ("The fraction loss and the entropy bonus train only the fraction proposal net; the quantile "
          "loss trains the embedding, cosine and quantile nets and must not be trained by the entropy bonus.")
GRADS = ["fraction_net.parameters()", "dqn_net.parameters()", "quantile_net.parameters()"]

torch.manual_seed(0)
N, A, D = 8, 3, 16
dqn_net = nn.Sequential(nn.Linear(6, D), nn.ReLU())
fraction_net = nn.Linear(D, N)
cosine_net = nn.Sequential(nn.Linear(4, D), nn.ReLU())
quantile_net = nn.Linear(D, A)
fraction_optim = torch.optim.RMSprop(fraction_net.parameters(), lr=1e-3)
quantile_optim = torch.optim.Adam([*dqn_net.parameters(), *cosine_net.parameters(), *quantile_net.parameters()], lr=1e-3)
for step in range(2):
    states, actions, targets = torch.randn(5, 6), torch.randint(0, A, (5,)), torch.randn(5, 1, N)
    state_embeddings = dqn_net(states)
    log_probs = F.log_softmax(fraction_net(state_embeddings), dim=1)  # BUG
    # FIX: log_probs = F.log_softmax(fraction_net(state_embeddings.detach()), dim=1)
    probs = log_probs.exp()
    taus = torch.cat([torch.zeros(5, 1), probs.cumsum(1)], dim=1)
    tau_hats = (taus[:, :-1] + taus[:, 1:]).detach() / 2
    entropies = -(log_probs * probs).sum(-1)
    cosines = torch.cos(tau_hats[..., None] * torch.pi * torch.arange(1, 5))
    quantiles = quantile_net(state_embeddings[:, None] * cosine_net(cosines))
    sa_quantiles = quantiles.gather(2, actions[:, None, None].expand(5, N, 1))
    fraction_loss = (sa_quantiles.detach().squeeze(-1)[:, 1:] * taus[:, 1:-1]).sum(1).mean()
    quantile_loss = F.smooth_l1_loss(sa_quantiles.expand(5, N, N), targets.expand(5, N, N))
    entropy_loss = -0.01 * entropies.mean()
    fraction_optim.zero_grad()
    (fraction_loss + entropy_loss).backward(retain_graph=True)
    fraction_optim.step()
    quantile_optim.zero_grad()
    (quantile_loss + entropy_loss).backward()  # BUG
    # FIX: quantile_loss.backward()
    quantile_optim.step()
