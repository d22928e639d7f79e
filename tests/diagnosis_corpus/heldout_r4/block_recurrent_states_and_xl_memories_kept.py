"""A block-recurrent transformer LM trained on a token stream cut into segments: its recurrent layer
reads a segment block by block, each block updating recurrent state vectors and attending to them
and to the previous block's keys (Transformer-XL memories); the last ones go to the next segment.

Rewritten from lucidrains/block-recurrent-transformer-pytorch#4 ("Question"): "Is it supposed to
detach? ... `next_states.append(layer_next_states.detach())` How would the gradients flow through
the states?" The maintainer: "i don't think they are propagating the gradients through the cache";
the library detaches the states and the XL memories it returns (`layer_next_states.detach()`,
`layer_xl_memories.detach()`). Kept with their graphs, either one carries a freed graph along.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "lucidrains/block-recurrent-transformer-pytorch#4"
CATEGORY = "carried-state"
CULPRIT = ["states", "xl_memories"]
CAUSE = "both the recurrent states and the XL memories keep the previous segment's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each segment's next-token loss trains the embedding, the recurrent layer and the output "
          "head through this segment only; the memories and states from earlier segments are constants.")
GRADS = ["model.emb.weight", "model.to_qk.weight", "model.to_state_update.weight", "model.to_logits.weight"]


class BlockRecurrentLM(nn.Module):   # the library's model, reduced to one recurrent layer
    def __init__(self, vocab=20, dim=8, num_states=2):
        super().__init__()
        self.emb, self.to_logits, self.to_qk = nn.Embedding(vocab, dim), nn.Linear(dim, vocab), nn.Linear(dim, 2 * dim)
        self.init_state, self.to_state_update = nn.Parameter(torch.randn(num_states, dim)), nn.Linear(dim, dim)

    def forward(self, tokens, xl_memories=None, states=None):
        state = self.init_state.expand(tokens.shape[0], -1, -1) if not states else states[0]
        mem, outs = (xl_memories[0] if xl_memories else None), []
        for block in self.emb(tokens).split(3, dim=1):
            q, k = self.to_qk(block).chunk(2, dim=-1)
            state = state + self.to_state_update(F.scaled_dot_product_attention(state, block, block))
            kv = torch.cat([t for t in (state, mem, k) if t is not None], dim=1)
            outs.append(block + F.scaled_dot_product_attention(q, kv, kv))
            mem = k   # this block's keys are the next block's XL memories
        next_states, next_xl_memories = [], []
        next_states.append(state)  # BUG
        # FIX: next_states.append(state.detach())
        next_xl_memories.append(mem)  # BUG
        # FIX: next_xl_memories.append(mem.detach())
        return self.to_logits(torch.cat(outs, dim=1)), next_xl_memories, next_states


torch.manual_seed(0)
model, stream = BlockRecurrentLM(), torch.randint(0, 20, (2, 25))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
xl_memories = states = None
for start in range(0, 18, 6):
    segment, labels = stream[:, start:start + 6], stream[:, start + 1:start + 7]
    logits, xl_memories, states = model(segment, xl_memories, states)
    loss = F.cross_entropy(logits.transpose(1, 2), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
