"""Soft-Masked BERT for spelling correction: a GRU detector gives each token a probability of being
wrong, the token's embedding is mixed with the [MASK] embedding by that probability, and a BERT
encoder corrects; the detection and correction losses are summed.

Rewritten from hiyoung123/SoftMaskedBert#16 ("loss.backward(retain_graph=True) 报错"): training as
the repository does raised "one of the variables needed for gradient computation has been modified
by an inplace operation: [torch.FloatTensor [768]] is at version 3; expected version 2". The model
computes the [MASK] embedding once, in `__init__`, `self.mask_e = self.embedding(mask_token_id)`,
through BERT's embeddings (and their LayerNorm); the training loop then needs `retain_graph=True`,
and each `optimizer.step()` rewrites the weights that graph saved. The fix given in the thread:
`self.mask_e = self.embedding(mask_token_id).detach()`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "hiyoung123/SoftMaskedBert#16"
CATEGORY = "computed-once"
CULPRIT = "model.ln.weight"
CAUSE = "a [MASK] embedding computed once keeps a graph over weights the optimizer rewrites"
FIX_KIND = "detach-carried"
ERROR = "inplace"
INTENT = ("The summed detection and correction loss trains the embeddings, the detector and the "
          "corrector; the [MASK] embedding mixed into the input is a constant.")
GRADS = "model.parameters()"


class SoftMaskedBert(nn.Module):
    def __init__(self, vocab=30, dim=16, mask_token_id=3):
        super().__init__()
        self.word, self.pos, self.ln = nn.Embedding(vocab, dim), nn.Embedding(12, dim), nn.LayerNorm(dim)
        self.detector, self.detect_out = nn.GRU(dim, 8, batch_first=True, bidirectional=True), nn.Linear(16, 1)
        self.corrector = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.linear = nn.Linear(dim, vocab)
        self.mask_e = self.embedding(torch.tensor([[mask_token_id]]))  # BUG
        # FIX: self.mask_e = self.embedding(torch.tensor([[mask_token_id]])).detach()

    def embedding(self, ids):   # BertEmbeddings, reduced
        return self.ln(self.word(ids) + self.pos(torch.arange(ids.shape[1])))

    def forward(self, input_ids):
        e = self.embedding(input_ids)
        p = torch.sigmoid(self.detect_out(self.detector(e)[0]))
        h = self.corrector(p * self.mask_e + (1 - p) * e) + e
        return F.log_softmax(self.linear(h), dim=-1), p


torch.manual_seed(0)
model = SoftMaskedBert()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    input_ids, labels, wrong = torch.randint(4, 30, (2, 6)), torch.randint(4, 30, (2, 6)), torch.rand(2, 6, 1).round()
    out, p = model(input_ids)
    loss = 0.8 * F.nll_loss(out.transpose(1, 2), labels) + 0.2 * F.binary_cross_entropy(p, wrong)
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()
