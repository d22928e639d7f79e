"""Contrastive fine-tuning of a BERT-style sentence encoder with in-batch negatives (anchors, then
positives, one backward) under DistributedDataParallel, whose default `broadcast_buffers=True`
copies rank 0's buffers into this rank's in place at every forward (reproduced on one process).

Rewritten from huggingface/sentence-transformers#2663 ("[v3] Set `broadcast_buffers = False` when
training with DDP"): the maintainer sets it to False "to avoid `RuntimeError: one of the variables
needed for gradient computation has been modified by an inplace operation.`" with BERT models,
whose embedding lookup saves the LongTensor buffer `position_ids` for backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "huggingface/sentence-transformers#2663"
CATEGORY = "inplace"
CULPRIT = "encoder.position_ids"
CAUSE = "DDP's buffer broadcast at the second forward overwrites the position_ids saved by the first"
FIX_KIND = "no-data-write"
ERROR = "inplace"
INTENT = "The ranking loss trains the whole encoder through both the anchor and the positive embeddings."
GRADS = "encoder.parameters()"


class TinyBert(nn.Module):
    def __init__(self, vocab=50, dim=16, max_len=12):
        super().__init__()
        self.word_embeddings, self.position_embeddings = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.register_buffer("position_ids", torch.arange(max_len).expand(1, -1).clone())
        self.layer = nn.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, ids):
        return self.layer(self.word_embeddings(ids) + self.position_embeddings(self.position_ids[:, :ids.shape[1]])).mean(1)


class DistributedDataParallel(nn.Module):   # what torch's DDP does with the buffers, on one rank
    def __init__(self, module, broadcast_buffers=True):
        super().__init__()
        self.module, self.broadcast_buffers, self._rank0 = module, broadcast_buffers, [b.clone() for b in module.buffers()]

    def forward(self, *inputs):
        if self.broadcast_buffers:
            with torch.no_grad():
                for buf, src in zip(self.module.buffers(), self._rank0):
                    buf.copy_(src)            # dist.broadcast(buf, src=0) writes into buf in place
        return self.module(*inputs)


torch.manual_seed(0)
encoder = TinyBert()
model = DistributedDataParallel(encoder)  # BUG
# FIX: model = DistributedDataParallel(encoder, broadcast_buffers=False)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
for step in range(2):
    anchors, positives = torch.randint(0, 50, (6, 10)), torch.randint(0, 50, (6, 10))
    scores = F.normalize(model(anchors), dim=-1) @ F.normalize(model(positives), dim=-1).t() * 20.0
    loss = F.cross_entropy(scores, torch.arange(len(scores)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
