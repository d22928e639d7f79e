"""Graph classification with a TopK pooling layer written by hand after PyG's TopKPooling: each node
gets a score tanh(x . w / |w|), the best half of the nodes is kept and scaled by its score; the user
also pins the score of some nodes (a padding node, the graph's virtual node) before choosing.

Rewritten from pyg-team/pytorch_geometric#355: the poster's pooling wrote `score[idx] = ...` and
backward failed with the in-place error. The maintainer: "The topK pooling implementation never
assigns values to only a subset of indices like you did above: score[idx] = ... That's the reason
PyTorch is complaining"; the poster: "tensor.index_fill works well" (the out-of-place index_fill).
tanh keeps its output for the backward, and the index assignment writes into it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pyg-team/pytorch_geometric#355"
CATEGORY = "inplace"
CULPRIT = "score"
CAUSE = "an index assignment writes into tanh's output, saved for the backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The graph classification loss trains the node encoder, the pooling's score vector and the "
          "classifier; the pinned nodes' scores are constants.")
GRADS = ["encoder.parameters()", "weight", "classifier.parameters()"]

torch.manual_seed(0)
encoder, classifier = nn.Linear(5, 8), nn.Linear(8, 2)
weight = nn.Parameter(torch.randn(8))
optimizer = torch.optim.Adam([*encoder.parameters(), weight, *classifier.parameters()], lr=0.01)
for step in range(2):
    x, label = torch.randn(12, 5), torch.randint(0, 2, (1,))
    pinned = torch.tensor([0, 11])             # nodes the pooling must always keep
    h = F.relu(encoder(x))
    score = torch.tanh((h * weight).sum(-1) / weight.norm())
    score[pinned] = 1.0  # BUG
    # FIX: score = score.index_fill(0, pinned, 1.0)
    perm = score.topk(6).indices
    pooled = h[perm] * score[perm].view(-1, 1)
    loss = F.cross_entropy(classifier(pooled.mean(0, keepdim=True)), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
