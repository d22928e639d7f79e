"""A click-through-rate model in the style of DeepCTR-Torch (sparse features embedded, an FM-style
interaction plus a small DNN), trained with log loss plus an L2 penalty on the embedding tables.
The penalty is built by `add_regularization_loss` in the model's constructor and stored as
`model.reg_loss`; `fit` adds it to every batch's loss.

Rewritten from shenweichen/DeepCTR-Torch#69 ("Why enable retain_graph in backward?"): `fit` did
`total_loss = loss + self.reg_loss + self.aux_loss; total_loss.backward(retain_graph=True)`. A
contributor explained that "self.reg_loss use the graph weight, so you should save the weight to
backward"; the maintainers then "upgraded the computation of reg_loss" so that "retain_graph=True can
be removed" (v0.2.2, v0.2.4): the constructor only records the weights to regularise, and `fit`
computes `reg_loss = self.get_regularization_loss()` for each batch. Without the workaround, the
penalty computed once is backwarded again at the second batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "shenweichen/DeepCTR-Torch#69"
CATEGORY = "computed-once"
CULPRIT = "model.reg_loss"
CAUSE = "the L2 penalty on the embeddings is computed once in the constructor"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("Each batch's log loss plus the L2 penalty of the current embedding weights trains the "
          "embeddings and the DNN.")
GRADS = "model.parameters()"


def get_regularization_loss(model):
    return model.l2_reg_embedding * sum(torch.norm(e.weight) for e in model.embedding_dict.values())


class DeepFMLike(nn.Module):
    def __init__(self, vocab_sizes=(10, 7, 5), dim=4, l2_reg_embedding=1e-2):
        super().__init__()
        self.embedding_dict = nn.ModuleDict({f"C{i}": nn.Embedding(v, dim) for i, v in enumerate(vocab_sizes)})
        self.dnn = nn.Sequential(nn.Linear(dim * len(vocab_sizes), 16), nn.ReLU(), nn.Linear(16, 1))
        self.l2_reg_embedding = l2_reg_embedding
        self.reg_loss = get_regularization_loss(self)     # add_regularization_loss in __init__

    def forward(self, x):
        emb = torch.stack([self.embedding_dict[f"C{i}"](x[:, i]) for i in range(x.shape[1])], 1)
        fm = 0.5 * (emb.sum(1).pow(2) - emb.pow(2).sum(1)).sum(1, keepdim=True)
        return torch.sigmoid(fm + self.dnn(emb.flatten(1)))


torch.manual_seed(0)
model = DeepFMLike()
optim = torch.optim.Adagrad(model.parameters(), lr=0.05)
for step in range(3):                                    # fit
    x = torch.stack([torch.randint(0, v, (32,)) for v in (10, 7, 5)], 1)
    y = torch.randint(0, 2, (32, 1)).float()
    loss = F.binary_cross_entropy(model(x), y, reduction="sum")
    optim.zero_grad()
    total_loss = loss + model.reg_loss  # BUG
    # FIX: total_loss = loss + get_regularization_loss(model)
    total_loss.backward()
    optim.step()
