"""A tabular model over a table with a text column: the text column is pre-encoded once into
embeddings by a text embedder, then the model trains on the stored table for several epochs.

Rewritten from pyg-team/pytorch-frame#229 ("Add `detach()` to `HashTextEmbedder`"): without the
detach, "training will give us this error in the second training iteration" (a link to the
forum's "Trying to backward through the graph a second time" thread); the maintainer checked
"this embedder here is not part of the network, right? Then this makes sense": it is the
pre-encoding of texts. The merged fix returns `self.embedding(idx).detach()`.
"""
import torch
import torch.nn as nn

SOURCE = "pyg-team/pytorch-frame#229"
CATEGORY = "computed-once"
CULPRIT = "text_emb"
CAUSE = "the pre-encoded text column keeps the embedder's graph, freed by the first backward"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The regression loss trains the tabular model only; the text embedder is a fixed "
          "pre-encoding step and must not be trained.")
GRADS = "model.parameters()"


class HashTextEmbedder:
    def __init__(self, num_hash_bins=32, dim=6):
        self.num_hash_bins, self.embedding = num_hash_bins, nn.Embedding(num_hash_bins, dim)

    def __call__(self, sentences):
        idx = torch.tensor([sum(map(ord, s)) % self.num_hash_bins for s in sentences])
        return self.embedding(idx)  # BUG
        # FIX: return self.embedding(idx).detach()


torch.manual_seed(0)
texts = ["red shoe", "blue hat", "green scarf", "red hat", "blue shoe", "old coat"] * 2
numerical, target = torch.randn(12, 3), torch.randn(12, 1)
text_emb = HashTextEmbedder()(texts)               # materialised once, stored with the table
model = nn.Sequential(nn.Linear(3 + 6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    for rows in (slice(0, 6), slice(6, 12)):
        pred = model(torch.cat([numerical[rows], text_emb[rows]], 1))
        loss = nn.functional.mse_loss(pred, target[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
