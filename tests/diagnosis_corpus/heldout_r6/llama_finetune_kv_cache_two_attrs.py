"""Fine-tuning a Llama-style attention layer batch by batch with its inference KV cache left on:
each forward writes this batch's keys and values into the module's `cache_k` / `cache_v`.

Rewritten from meta-llama/llama-cookbook#247 ("Cache mechanism would result in Error while
training?"): "the cache for k and v is saved as part of the old computation graph. The problem is
that the grad_fn for backward propagation is still retained", giving "Trying to backward through the
graph a second time". The reporter's fix, posted in the thread (closed after triage), detaches both
caches in forward (`self.cache_k = self.cache_k.to(xq).detach()`, the same for `cache_v`), after
which "it can be finetuned (forward and backward batch by batch)". Detaching one alone still fails.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "meta-llama/llama-cookbook#247"
CATEGORY = "carried-state"
CULPRIT = ["attn.cache_k", "attn.cache_v"]
CAUSE = "the key and value caches keep the previous batch's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each batch's next-token loss trains the attention projections and the output head through "
          "this batch's keys and values only; what the caches held before is not trained through.")
GRADS = ["attn.parameters()", "head.parameters()"]


class Attention(nn.Module):
    def __init__(self, dim=8, max_batch=4, max_len=6):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.cache_k, self.cache_v = torch.zeros(max_batch, max_len, dim), torch.zeros(max_batch, max_len, dim)

    def forward(self, x, start_pos=0):
        bsz, seqlen, dim = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        self.cache_k = self.cache_k.to(xq)  # BUG
        # FIX: self.cache_k = self.cache_k.to(xq).detach()
        self.cache_v = self.cache_v.to(xq)  # BUG
        # FIX: self.cache_v = self.cache_v.to(xq).detach()
        self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos:start_pos + seqlen] = xv
        keys, values = self.cache_k[:bsz, :start_pos + seqlen], self.cache_v[:bsz, :start_pos + seqlen]
        mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
        scores = F.softmax(xq @ keys.transpose(1, 2) / math.sqrt(dim) + mask, dim=-1)
        return self.wo(scores @ values)


torch.manual_seed(0)
emb, attn, head = nn.Embedding(12, 8).requires_grad_(False), Attention(), nn.Linear(8, 12)
optimizer = torch.optim.AdamW([*attn.parameters(), *head.parameters()], lr=1e-3)
for batch in range(2):
    tokens = torch.randint(0, 12, (4, 6))
    logits = head(attn(emb(tokens[:, :-1])))
    loss = F.cross_entropy(logits.reshape(-1, 12), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
