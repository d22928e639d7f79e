"""A Dreamer-style world model (RSSM): each batch of sequences is rolled through the recurrent state
(`deter` and `stoch`, in a dict) and trained on reconstruction plus the posterior-prior KL; `observe`
masks the carried state by `1 - is_first`, so a sequence that starts an episode starts from zeros.

Rewritten from danijar/dreamerv2#44 ("Why share states across random batches for training the world
model?"): the posterior of the last step of one batch is passed in as the start state of the next.
The maintainer: "This is only used when `is_first` is `False` at the beginning of the training batch.
By default, it's always `True` so the world model resets its hidden state". The repository is
TensorFlow, where each train call's tape ends the graph; in this PyTorch rewrite the carried dict keeps
the previous batch's freed graph (the reset `v * (1 - is_first)` keeps it attached). The fix starts
each batch from the initial state, as the default configuration means.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence

SOURCE = "danijar/dreamerv2#44"
CATEGORY = "carried-state"
CULPRIT = ["state['deter']", "state['stoch']"]
CAUSE = "the last posterior dict of one batch starts the next batch"
FIX_KIND = "reset-per-episode"
ERROR = "second time"
INTENT = ("Each batch's reconstruction and KL losses train the encoder, the RSSM and the decoder through that "
          "batch's sequences only, each starting from the RSSM's initial (zero) state.")
GRADS = ["encoder.parameters()", "rssm.parameters()", "decoder.parameters()"]


class RSSM(nn.Module):
    def __init__(self, embed=8, act=2, deter=16, stoch=4):
        super().__init__()
        self.cell = nn.GRUCell(stoch + act, deter)
        self.prior_net, self.post_net = nn.Linear(deter, 2 * stoch), nn.Linear(deter + embed, 2 * stoch)

    def observe(self, embed, action, is_first, state=None):
        state, feats, kl = state or {'deter': torch.zeros(len(embed), 16), 'stoch': torch.zeros(len(embed), 4)}, [], 0
        for t in range(embed.shape[1]):
            state = {k: v * (1.0 - is_first[:, t, None]) for k, v in state.items()}
            deter = self.cell(torch.cat([state['stoch'], action[:, t]], -1), state['deter'])
            prior_mean, prior_std = self.prior_net(deter).chunk(2, -1)
            post_mean, post_std = self.post_net(torch.cat([deter, embed[:, t]], -1)).chunk(2, -1)
            post = Normal(post_mean, F.softplus(post_std) + 0.1)
            kl = kl + kl_divergence(post, Normal(prior_mean, F.softplus(prior_std) + 0.1)).mean()
            state = {'deter': deter, 'stoch': post.rsample()}
            feats.append(torch.cat([state['deter'], state['stoch']], -1))
        return state, torch.stack(feats, 1), kl


torch.manual_seed(0)
encoder, rssm, decoder = nn.Linear(10, 8), RSSM(), nn.Linear(20, 10)
optimizer = torch.optim.Adam([*encoder.parameters(), *rssm.parameters(), *decoder.parameters()], lr=6e-4)
state = None
for step in range(2):
    obs, action, is_first = torch.randn(4, 5, 10), torch.randn(4, 5, 2), torch.zeros(4, 5)
    is_first[:, 0] = 1.0                                  # every sampled sequence starts an episode
    state, feats, kl = rssm.observe(encoder(obs), action, is_first, state)  # BUG
    # FIX: state, feats, kl = rssm.observe(encoder(obs), action, is_first, None)
    loss = F.mse_loss(decoder(feats), obs) + kl
    optimizer.zero_grad(), loss.backward(), optimizer.step()
