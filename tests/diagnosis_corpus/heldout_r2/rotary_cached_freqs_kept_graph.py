"""A small language model with rotary position embeddings, fully fine-tuned (the report used accelerate).
Rewritten from lucidrains/rotary-embedding-torch#18 ("caching frequency results in RuntimeError: Trying
to backward through the graph a second time"): it failed "when the rotary embedding was trying to read
cached frequency at the second `loss.backward()`". The library's fix keeps the cache but stores it
without its graph: `self.cached_freqs = freqs.detach()`. How the frequencies came to carry a graph is not
in the thread; here `model.requires_grad_(True)` (unfreeze everything) turns on their `requires_grad`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "lucidrains/rotary-embedding-torch#18"
CATEGORY = "carried-state"
CULPRIT = "model.rotary.cached_freqs"
CAUSE = "the rotary module caches its frequencies with the first step's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The next-token loss trains the embedding, the attention projections and the output layer; "
          "the cached rotary frequencies are a positional code reused as a constant in every later step.")
GRADS = ["model.emb.weight", "model.to_qkv.weight", "model.to_out.weight"]

class RotaryEmbedding(nn.Module):
    def __init__(self, dim, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim)
        self.freqs, self.cached_freqs = nn.Parameter(inv_freq, requires_grad=False), None

    def forward(self, seq_len):
        if self.cached_freqs is not None and seq_len <= self.cached_freqs.shape[0]:
            return self.cached_freqs[:seq_len]
        freqs = torch.einsum("i,f->if", torch.arange(seq_len).float(), self.freqs).repeat_interleave(2, dim=-1)
        self.cached_freqs = freqs  # BUG
        # FIX: self.cached_freqs = freqs.detach()
        return freqs

def rotate(x, f):
    x1, x2 = x.unflatten(-1, (-1, 2)).unbind(-1)
    return x * f.cos() + torch.stack((-x2, x1), dim=-1).flatten(-2) * f.sin()

class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=8):
        super().__init__()
        self.emb, self.rotary = nn.Embedding(vocab, dim), RotaryEmbedding(dim)
        self.to_qkv, self.to_out = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        (q, k, v), n, f = self.to_qkv(self.emb(tokens)).chunk(3, dim=-1), tokens.shape[-1], self.rotary(tokens.shape[-1])
        attn = (rotate(q, f) @ rotate(k, f).transpose(-1, -2) / 8 ** 0.5).masked_fill(torch.ones(n, n).triu(1).bool(), -1e9)
        return self.to_out(attn.softmax(-1) @ v)

torch.manual_seed(0)
model = TinyLM().requires_grad_(True)             # full fine-tuning: unfreeze everything
optimizer = torch.optim.AdamW([p for n, p in model.named_parameters() if n != "rotary.freqs"], lr=1e-3)
for step in range(3):
    tokens = torch.randint(0, 16, (4, 7))
    loss = F.cross_entropy(model(tokens[:, :-1]).reshape(-1, 16), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
