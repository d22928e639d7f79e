"""A decoder with a Titans neural memory (titans-pytorch): a fast-weight memory is updated at test
time by a momentum step on the gradient of its associative loss ("surprise"), and the memory state
(a NeuralMemState named tuple: sequence index, weights, momentum) is passed from batch to batch.

Rewritten from lucidrains/titans-pytorch#34 ("Can't backprop when passing NeuralMemState"): the
poster integrates `NeuralMemory` into Mistral decoder layers and passes the returned state to the
next call; training then fails with the "backward through the graph a second time" error. The
library exports `mem_state_detach` (and `forward(..., detach_mem_state=True)`); PR #54, addressing
#34, documents it: "Shows how to use `mem_state_detach` to avoid 'backward through graph a second
time' errors". Every tensor of the tuple (weights and momentum) carries the previous batch's graph.
"""
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "lucidrains/titans-pytorch#34"
CATEGORY = "carried-state"
CULPRIT = ["mem_state.weights", "mem_state.states"]
CAUSE = "the memory state tuple passed to the next batch keeps this batch's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each batch's language-modelling loss trains the embedding, the memory's projections and step "
          "gate, and the head through this batch; the carried memory state is a constant starting point.")
GRADS = ["embed.parameters()", "memory.parameters()", "head.parameters()"]

NeuralMemState = namedtuple("NeuralMemState", ["seq_index", "weights", "states"])


def mem_state_detach(state):
    return NeuralMemState(*[t.detach() if torch.is_tensor(t) else t for t in state])


torch.manual_seed(0)
dim = 16
embed, head = nn.Embedding(32, dim), nn.Linear(dim, 32)
memory = nn.ModuleDict(dict(to_qkv=nn.Linear(dim, 3 * dim, bias=False), to_adaptive_step=nn.Linear(dim, 1)))
init_weights = nn.Parameter(0.1 * torch.randn(dim, dim))           # the memory model's initial weights
optimizer = torch.optim.Adam([*embed.parameters(), *memory.parameters(), *head.parameters(), init_weights], lr=1e-3)
mem_state = None
for step in range(3):
    tokens = torch.randint(0, 32, (2, 9))
    x = embed(tokens[:, :-1])
    seq_index, weights, momentum = mem_state or (0, init_weights, torch.zeros_like(init_weights))
    q, k, v = memory["to_qkv"](x).chunk(3, dim=-1)
    surprise = 2 * torch.einsum("bnd,bne->de", k, k @ weights - v) / k.shape[1]   # grad of ||k W - v||^2
    momentum = 0.9 * momentum - torch.sigmoid(memory["to_adaptive_step"](x).mean()) * 0.1 * surprise
    weights = weights + momentum
    next_state = NeuralMemState(seq_index + x.shape[1], weights, momentum)
    loss = F.cross_entropy(head(x + q @ weights).transpose(1, 2), tokens[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    mem_state = next_state  # BUG
    # FIX: mem_state = mem_state_detach(next_state)
