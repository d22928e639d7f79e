"""A retrieval recommender: user vectors are scored against every item embedding (a full softmax
over the catalogue), and the positive items' embeddings are also looked up for a pairwise term.
The item table is an `nn.Embedding(..., max_norm=1.0)`.

Rewritten from pytorch/pytorch#26596 ("nn.Embedding with max_norm shows unstable behavior and causes
sometimes runtime error"): `a = embedding.weight @ W.t()` followed by `b = embedding(idx) @ W.t()`
raises the in-place error at backward; swapping the two lines avoids it. The maintainers' reading:
with max_norm, Embedding's forward renormalises the looked-up rows of `weight` in place, after the
matmul saved it. The fix they documented (pytorch/pytorch#45595, which closed the issue): "replacing
the line `a = embedding.weight @ W.t()` with `a = embedding.weight.clone() @ W.t()` fixes the error",
now a note in nn.Embedding's docs. The writer is the embedding lookup, not any line of the user's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/pytorch#26596"
CATEGORY = "inplace"
CULPRIT = "item_emb.weight"
CAUSE = "the max_norm lookup renormalises item embeddings the catalogue score saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The catalogue softmax loss and the pairwise loss both train the user tower and the item "
          "embeddings in one optimizer step.")
GRADS = ["user_tower.parameters()", "item_emb.weight"]

torch.manual_seed(0)
n_items, d = 20, 8
item_emb = nn.Embedding(n_items, d, max_norm=1.0)
with torch.no_grad():
    item_emb.weight.mul_(3.0)                           # rows start above the max norm
user_tower = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, d))
optimizer = torch.optim.Adam([*user_tower.parameters(), *item_emb.parameters()], lr=1e-2)
for step in range(2):
    users, pos_items = torch.randn(4, 6), torch.randint(0, n_items, (4,))
    user_vec = user_tower(users)
    catalogue_scores = user_vec @ item_emb.weight.t()  # BUG
    # FIX: catalogue_scores = user_vec @ item_emb.weight.clone().t()
    pos_scores = (user_vec * item_emb(pos_items)).sum(-1)
    neg_scores = (user_vec * item_emb(torch.randint(0, n_items, (4,)))).sum(-1)
    loss = F.cross_entropy(catalogue_scores, pos_items) - F.logsigmoid(pos_scores - neg_scores).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
