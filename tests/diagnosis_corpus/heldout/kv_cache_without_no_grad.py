"""An attention layer that writes keys into its cache buffer with autograd on, then trains twice.

Rewritten from meta-llama/llama#304 ("Dont fail on training with random weights"): running the
model forward-backward twice raised the error "because we are writing into cache_k and cache_v
without setting torch.no_grad"; the fix writes the cache without a graph.
"""
import torch
import torch.nn as nn

SOURCE = "meta-llama/llama#304"
CATEGORY = "carried-state"
CULPRIT = "attn.cache_k"
CAUSE = "the cache buffer keeps the graph of the step that wrote it"
FIX_KIND = "detach-carried"
ERROR = "second time"


class Attention(nn.Module):
    def __init__(self, dim=8, max_len=16):
        super().__init__()
        self.wk, self.wq = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.register_buffer("cache_k", torch.zeros(1, max_len, dim))

    def forward(self, x, start_pos):
        k, q = self.wk(x), self.wq(x)
        end = start_pos + x.shape[1]
        self.cache_k[:, start_pos:end] = k  # BUG
        # FIX: self.cache_k[:, start_pos:end] = k.detach()
        keys = self.cache_k[:, :end]
        return torch.softmax(q @ keys.transpose(1, 2), dim=-1) @ keys


torch.manual_seed(0)
attn = Attention()
opt = torch.optim.SGD(attn.parameters(), lr=0.1)
for step in range(3):
    out = attn(torch.randn(1, 4, 8), start_pos=0)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
