"""Segment-by-segment training of an attention layer with a compressive memory passed between segments.

Rewritten from jlamprou/Infini-Attention#3 ("Do we need `.backward(retain_graph=True)`?"): with
one backward per segment the reporter hit the error; the author's answer: pass the compressive
memory in and out of the forward, and detach M and z when updating it ("there is no need to keep
them on the backward").
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "jlamprou/Infini-Attention#3"
CATEGORY = "carried-state"
CULPRIT = "mem['M']"
CAUSE = "the memory passed to the next segment keeps the last segment's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"


class InfiniAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.wq, self.wk, self.wv = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x, mem):
        q, k, v = F.elu(self.wq(x)) + 1, F.elu(self.wk(x)) + 1, self.wv(x)
        retrieved = (q @ mem["M"]) / (q @ mem["z"]).clamp(min=1e-6)
        new_M = mem["M"] + k.transpose(0, 1) @ v
        new_z = mem["z"] + k.sum(0, keepdim=True).transpose(0, 1)
        return retrieved + torch.softmax(q @ k.T, -1) @ v, {"M": new_M, "z": new_z}


torch.manual_seed(0)
layer = InfiniAttention()
opt = torch.optim.Adam(layer.parameters(), lr=1e-3)
mem = {"M": torch.zeros(8, 8), "z": torch.ones(8, 1)}
for segment in torch.randn(4, 5, 8):
    out, mem = layer(segment, mem)  # BUG
    # FIX: out, mem = layer(segment, mem); mem = {k: v.detach() for k, v in mem.items()}
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
