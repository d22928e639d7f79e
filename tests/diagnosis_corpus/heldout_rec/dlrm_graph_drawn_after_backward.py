"""A small DLRM (embedding tables, bottom and top MLPs, dot interactions) whose autograd graph is
drawn after training, torchviz-style, with the tensors each node saved.

Rewritten from facebookresearch/dlrm#71 ("plot_compute_graph"): with `--plot-compute-graph`,
`make_dot(V, params=dict(dlrm.named_parameters()))` after training raises "Trying to backward
through the graph a second time, but the buffers have already been freed" from inside torchviz,
which reads each node's saved tensors. The maintainer's fix: change the training loop's
`E.backward()` to `E.backward(retain_graph=True)`, which the reporter confirmed.
"""
import torch
import torch.nn as nn


def draw_graph(var):      # a torchviz-like drawing: one line per node, with the activations it saved
    lines, seen, stack = [], set(), [var.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        saved = [getattr(fn, a) for a in ("_saved_self", "_saved_result") if hasattr(fn, a)]
        kb = sum(t.numel() * t.element_size() for t in saved if isinstance(t, torch.Tensor)) / 1024
        lines.append(f"{fn.name()}: {kb:.2f} KiB of saved activations")
        stack += [f for f, _ in fn.next_functions]
    return lines


SOURCE = "facebookresearch/dlrm#71"
CATEGORY = "saved-tensors"
CULPRIT = "Z"
CAUSE = "drawing reads saved tensors that E.backward() already freed"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The loss E trains every part of the model (embeddings, bottom and top MLPs); drawing the "
          "graph must read it without changing any gradient.")
GRADS = ["emb.parameters()", "bot.parameters()", "top.parameters()"]

torch.manual_seed(0)
emb = nn.ModuleList(nn.EmbeddingBag(10, 4, mode="sum") for _ in range(2))
bot = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
top = nn.Sequential(nn.Linear(4 + 3, 1), nn.Sigmoid())
optimizer = torch.optim.SGD([*emb.parameters(), *bot.parameters(), *top.parameters()], lr=0.1)
plot_compute_graph = True
for j in range(3):
    dense, T = torch.randn(6, 3), torch.randint(0, 2, (6, 1)).float()
    sparse = [torch.randint(0, 10, (6, 2)) for _ in emb]
    feats = torch.stack([bot(dense)] + [e(s) for e, s in zip(emb, sparse)], 1)
    inter = feats @ feats.transpose(1, 2)
    iu = torch.triu_indices(3, 3, 1)
    Z = top(torch.cat([feats[:, 0], inter[:, iu[0], iu[1]]], 1))
    E = nn.functional.binary_cross_entropy(Z, T)
    optimizer.zero_grad()
    E.backward()  # BUG
    # FIX: E.backward(retain_graph=True)
    optimizer.step()
if plot_compute_graph:
    dot = draw_graph(Z)
