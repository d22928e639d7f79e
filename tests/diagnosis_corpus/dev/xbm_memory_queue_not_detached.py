"""Cross-batch memory (XBM) for metric learning: the embeddings of past batches are kept in a
queue, and a contrastive loss pairs this batch's embeddings with everything in the queue.

Rewritten from bnu-wangxun/Deep_Metric#45 ("XBM memory management after detach() operation"):
the paper's algorithm detaches the embeddings "before being put into the queue"; asked how the
loss can still use old batches, the maintainer answered "We don't calculate the gradient of
features from old batches (`anchors.transpose()`), but only back-propagate the gradient to
current features (`M.feats`)". The repository enqueues `feats.detach()`. Enqueued with their graph,
the queue's rows still hold the freed graphs of earlier batches.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "bnu-wangxun/Deep_Metric#45"
CATEGORY = "carried-state"
CULPRIT = "xbm.feats"
CAUSE = "the memory queue keeps earlier batches' embeddings with their freed graphs"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The contrastive loss trains the embedding model through this batch's embeddings only; "
          "the embeddings of earlier batches in the memory are constants.")
GRADS = "model.parameters()"


class XBM:
    def __init__(self, size=24, dim=8):
        self.feats, self.targets, self.ptr, self.size = torch.zeros(size, dim), torch.zeros(size, dtype=torch.long), 0, size

    def enqueue_dequeue(self, feats, targets):
        n = len(targets)
        self.feats[self.ptr:self.ptr + n] = feats
        self.targets[self.ptr:self.ptr + n] = targets
        self.ptr = (self.ptr + n) % self.size


def contrastive(a, ya, b, yb, margin=0.5):
    sim = a @ b.t()
    pos, neg = ya[:, None] == yb[None], ya[:, None] != yb[None]
    return ((1 - sim) * pos).sum() / pos.sum() + F.relu(sim - margin)[neg].mean()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
xbm = XBM()
for it in range(3):
    images, targets = torch.randn(8, 10), torch.randint(0, 3, (8,))
    feats = F.normalize(model(images), dim=1)
    xbm.enqueue_dequeue(feats, targets)  # BUG
    # FIX: xbm.enqueue_dequeue(feats.detach(), targets)
    loss = contrastive(feats, targets, feats, targets) + contrastive(feats, targets, xbm.feats, xbm.targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
