"""A recurrent block that keeps its recurrent state on the module between forwards, trained under
gradient checkpointing.

Rewritten from huggingface/transformers#43203 (switching gradient checkpointing to
use_reentrant=False): RecurrentGemma's gradient-checkpointing test hit the "second time" error
because "the recurrent block [reused] graph-attached state between forwards"; the fix clears the
recurrent cache state (sets it to None) when no cache is wanted, so each forward starts afresh.
"""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

SOURCE = "huggingface/transformers#43203"
CATEGORY = "checkpoint-compile"
CULPRIT = "model.rg_lru.recurrent_states"
CAUSE = "the recurrent cache keeps the previous forward's graph"
FIX_KIND = "reset-per-episode"
ERROR = "second time"


class RGLRU(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(dim, dim)
        self.recurrent_states = None

    def forward(self, x):
        h = torch.zeros_like(x[:, 0]) if self.recurrent_states is None else self.recurrent_states
        outs = []
        for t in range(x.shape[1]):
            a = torch.sigmoid(self.gate(x[:, t]))
            h = a * h + (1 - a) * x[:, t]
            outs.append(h)
        self.recurrent_states = h
        return torch.stack(outs, 1)


class Model(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.rg_lru, self.head = RGLRU(dim), nn.Linear(dim, 1)

    def forward(self, x, use_cache=False):
        out = checkpoint(self.rg_lru, x, use_reentrant=False)
        return self.head(out)  # BUG
        # FIX: self.rg_lru.recurrent_states = self.rg_lru.recurrent_states if use_cache else None; return self.head(out)


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = model(torch.randn(2, 5, 6)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
