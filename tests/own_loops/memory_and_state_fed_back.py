"""A segment-recurrent language model (Transformer-XL-like) that returns its memory of the last
segment and a recurrent state, both fed back into the next call; neither is detached, so the next
segment's loss runs into the last one's freed graph. The error names one of them: both need the fix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = "Each segment's loss trains the model through that segment only; memory and state carry values forward."
GRADS = "model.parameters()"
RULE = "carried-across-steps"
KIND = "detach-carried"


class SegmentLM(nn.Module):
    def __init__(self, vocab=12, d=8):
        super().__init__()
        self.emb, self.mix, self.out = nn.Embedding(vocab, d), nn.Linear(2 * d, d), nn.Linear(d, vocab)

    def forward(self, tokens, memory, state):
        x = self.emb(tokens)
        ctx = x.mean(1, keepdim=True) if memory is None else memory
        h = torch.tanh(self.mix(torch.cat([x, ctx.expand_as(x)], -1)))
        state = h.mean(1) if state is None else state + h.mean(1)
        return self.out(h + state[:, None]), h[:, -1:], state


torch.manual_seed(0)
model, stream = SegmentLM(), torch.randint(0, 12, (2, 19))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
memory = state = None
for start in range(0, 15, 5):
    logits, memory, state = model(stream[:, start:start + 5], memory, state)
    loss = F.cross_entropy(logits.transpose(1, 2), stream[:, start + 1:start + 6])
    opt.zero_grad()
    loss.backward()  # BUG
    # FIX: loss.backward(); memory, state = memory.detach(), state.detach()
    opt.step()
