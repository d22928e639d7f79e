"""Moving semantic transfer network (MSTN) for domain adaptation: source (by label) and target (by
pseudo-label) class centroids are moving averages across batches, pulled together by a semantic loss.

Rewritten from EasonApolo/mstn#4 ("is the semantic loss right?"), about
`s_centroid = (1-decay) * self.s_centroid + decay * current_s_centroid` (same for `t_centroid`),
`semantic_loss = self.MSEloss(s_centroid, t_centroid)`, `self.s_centroid = s_centroid.detach()`,
`self.t_centroid = t_centroid.detach()`. The maintainer: "since self.s_centroid is the detached
version of the last centroid, we can think of it as just a normal tensor that does not require
grad ... The necessity of 'detach' is that the computing graph will continuously grow as we save
last centroid and use it in the next epoch." Without it, both stored centroids carry the previous
batch's freed graph into the next semantic loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "EasonApolo/mstn#4"
CATEGORY = "carried-state"
CULPRIT = ["mstn.s_centroid", "mstn.t_centroid"]
CAUSE = "both moving centroids are stored with their graph and reused in the next batch"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The source cross-entropy and the semantic loss train the feature extractor and the "
          "classifier; the semantic loss reaches them only through this batch's centroids, earlier "
          "batches' centroids being constants.")
GRADS = ["G.parameters()", "C.parameters()"]


class MSTN:
    def __init__(self, n_classes, dim, decay=0.3):
        self.n_classes, self.decay = n_classes, decay
        self.s_centroid, self.t_centroid = torch.zeros(n_classes, dim), torch.zeros(n_classes, dim)

    def semantic_loss(self, s_feat, s_label, t_feat, t_logits):
        s_onehot = F.one_hot(s_label, self.n_classes).float()
        t_onehot = F.one_hot(t_logits.argmax(1), self.n_classes).float()
        current_s = s_onehot.t() @ s_feat / s_onehot.sum(0).clamp(min=1)[:, None]
        current_t = t_onehot.t() @ t_feat / t_onehot.sum(0).clamp(min=1)[:, None]
        s_centroid = (1 - self.decay) * self.s_centroid + self.decay * current_s
        t_centroid = (1 - self.decay) * self.t_centroid + self.decay * current_t
        self.s_centroid = s_centroid  # BUG
        # FIX: self.s_centroid = s_centroid.detach()
        self.t_centroid = t_centroid  # BUG
        # FIX: self.t_centroid = t_centroid.detach()
        return F.mse_loss(s_centroid, t_centroid)


torch.manual_seed(0)
G = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8))
C = nn.Linear(8, 3)
mstn = MSTN(n_classes=3, dim=8)
optimizer = torch.optim.SGD([*G.parameters(), *C.parameters()], lr=0.01, momentum=0.9)
for step in range(3):
    xs, ys, xt = torch.randn(12, 12), torch.arange(12) % 3, torch.randn(12, 12) + 0.5
    fs, ft = G(xs), G(xt)
    loss = F.cross_entropy(C(fs), ys) + 0.5 * mstn.semantic_loss(fs, ys, ft, C(ft))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
