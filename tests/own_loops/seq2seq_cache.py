"""A seq2seq model whose frozen encoder's outputs are cached by sentence id, so a repeated sentence
skips the encoder; the cache keeps each entry with the graph of the step that made it."""
import torch
import torch.nn as nn

INTENT = "The encoder is a frozen pre-trained feature extractor; the loss trains the decoder and the output layer only."
GRADS = ["dec.parameters()", "out.parameters()"]
RULE = "computed-once"
KIND = "detach-carried"     # the cache kept detached (the fix)

torch.manual_seed(1)
enc = nn.GRU(8, 16, batch_first=True)
dec = nn.GRUCell(8, 16)
out = nn.Linear(16, 5)
opt = torch.optim.Adam([*dec.parameters(), *out.parameters()], lr=1e-3)
cache = {}
data = [(i % 3, torch.randn(1, 6, 8), torch.randint(0, 5, (4,))) for i in range(6)]
for sid, src, tgt in data:
    if sid not in cache:
        memory, h = enc(src)
        cache[sid] = (memory, h[0])  # BUG
        # FIX: cache[sid] = (memory.detach(), h[0].detach())
    memory, h = cache[sid]
    loss = 0.0
    x = torch.zeros(1, 8)
    for t in range(4):
        h = dec(x, h)
        ctx = torch.softmax(memory[0] @ h[0], 0) @ memory[0]
        loss = loss + nn.functional.cross_entropy(out(h + ctx), tgt[t:t + 1])
    opt.zero_grad()
    loss.backward()
    opt.step()
