"""A gradient attack (PR-BCD style) on the edge weights of a frozen GCN whose layers cache their
normalised adjacency.

Rewritten from sigeisler/robustness_of_gnns_at_scale#4 ("self.attacked_model.train() leads to
autograd error"): in train mode the attack's backward raised "Trying to backward through the
graph a second time". The maintainer: "I would suggest switching off caching"; the reporter:
"You saved me!!!". Both layers cache the first step's adjacency, with its graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "sigeisler/robustness_of_gnns_at_scale#4"
CATEGORY = "computed-once"
CULPRIT = ["model.conv1._cached_adj", "model.conv2._cached_adj"]
CAUSE = "each GCN layer caches the first step's normalised adjacency with its graph"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The attack loss trains only the edge-weight perturbation, through this step's normalised "
          "adjacency; the GCN's weights stay fixed.")
GRADS = ["perturbed_edge_weight"]


class GCNConv(nn.Module):
    def __init__(self, n_in, n_out, cached=False):
        super().__init__()
        self.lin, self.cached, self._cached_adj = nn.Linear(n_in, n_out), cached, None

    def forward(self, x, edge_index, edge_weight):
        adj = self._cached_adj if self.cached else None
        if adj is None:
            adj = torch.eye(len(x)).index_put((edge_index[0], edge_index[1]), edge_weight, accumulate=True)
            d = adj.sum(1).rsqrt()
            adj = d[:, None] * adj * d[None]
            self._cached_adj = adj if self.cached else None
        return adj @ self.lin(x)


class GCN(nn.Module):
    def __init__(self, cached):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(5, 8, cached), GCNConv(8, 3, cached)

    def forward(self, x, ei, w):
        return self.conv2(F.relu(self.conv1(x, ei, w)), ei, w)


torch.manual_seed(0)
x, y = torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2])
edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 0], [1, 0, 2, 1, 4, 3, 0, 5]])
model = GCN(cached=True).train().requires_grad_(False)  # BUG
# FIX: model = GCN(cached=False).train().requires_grad_(False)
perturbed_edge_weight = torch.zeros(8, requires_grad=True)
attack_opt = torch.optim.Adam([perturbed_edge_weight], lr=0.1)
for step in range(3):
    loss = -F.cross_entropy(model(x, edge_index, torch.sigmoid(2.0 - perturbed_edge_weight)), y)
    attack_opt.zero_grad()
    loss.backward()
    attack_opt.step()
