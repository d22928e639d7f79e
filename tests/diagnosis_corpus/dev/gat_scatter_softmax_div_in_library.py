"""A graph attention layer: scores per edge, normalised over each target node's incoming edges
with a scatter softmax from a scatter library, then used to weight the messages.

Rewritten from rusty1s/pytorch_scatter#119 ("RuntimeError on backward pass through
scatter_softmax"): with torch_scatter 2.0.3, a backward through `scatter_softmax` raised "one of
the variables needed for gradient computation has been modified by an inplace operation", "a
result of `scatter_softmax` calling in-place functions". The library's fix divides out of place:
`return recentered_scores_exp.div(normalizing_constants)`. The write is inside the library.
"""
import torch
import torch.nn as nn


def scatter_softmax(src, index, num_nodes):                 # the library's function (2.0.3-style)
    max_value_per_index = torch.zeros(num_nodes).scatter_reduce(0, index, src, "amax", include_self=False)
    recentered_scores_exp = (src - max_value_per_index.gather(0, index)).exp_()
    sum_per_index = torch.zeros(num_nodes).index_add(0, index, recentered_scores_exp)
    return recentered_scores_exp.div_(sum_per_index.gather(0, index))  # BUG
    # FIX: return recentered_scores_exp.div(sum_per_index.gather(0, index))


SOURCE = "rusty1s/pytorch_scatter#119"
CATEGORY = "inplace"
CULPRIT = "alpha"
CAUSE = "the scatter library divides exp's saved result in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The node classification loss trains the attention layer (its projection and its attention vector) and the classifier."
GRADS = ["lin.parameters()", "att", "cls.parameters()"]

torch.manual_seed(0)
num_nodes, src_idx, dst_idx = 6, torch.tensor([0, 1, 2, 3, 4, 5, 0, 2]), torch.tensor([1, 0, 1, 2, 2, 3, 5, 4])
lin, cls = nn.Linear(5, 8), nn.Linear(8, 3)
att = nn.Parameter(torch.randn(16) * 0.1)
optimizer = torch.optim.Adam([*lin.parameters(), att, *cls.parameters()], lr=1e-2)
for epoch in range(2):
    x, y = torch.randn(num_nodes, 5), torch.randint(0, 3, (num_nodes,))
    h = lin(x)
    e = nn.functional.leaky_relu(torch.cat([h[src_idx], h[dst_idx]], 1) @ att, 0.2)
    alpha = scatter_softmax(e, dst_idx, num_nodes)
    out = torch.zeros(num_nodes, 8).index_add(0, dst_idx, alpha[:, None] * h[src_idx])
    loss = nn.functional.cross_entropy(cls(out), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
