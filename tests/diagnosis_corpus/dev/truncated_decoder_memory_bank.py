"""Truncated BPTT on the target side of a seq2seq model: the encoder runs once per batch, the
decoder chunk by chunk, one backward per chunk.

Rewritten from OpenNMT/OpenNMT-py#403 ("Pytorch 0.4 support"): with truncated decoding the
Trainer hit "Trying to backward through the graph a second time"; OpenNMT's Trainer calls the
whole model (encoder included) again for every truncated chunk, detaching only the decoder state
between chunks, so each chunk's backward has its own encoder graph.
"""
import torch
import torch.nn as nn

SOURCE = "OpenNMT/OpenNMT-py#403"
CATEGORY = "computed-once"
CULPRIT = "memory_bank"
CAUSE = "encoder output computed once per batch, backwarded by the first chunk"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
encoder, decoder = nn.GRU(4, 8), nn.GRUCell(4 + 8, 8)
generator = nn.Linear(8, 4)
params = [*encoder.parameters(), *decoder.parameters(), *generator.parameters()]
optim = torch.optim.SGD(params, lr=0.1)
trunc_size = 3
for batch in range(2):
    src, tgt = torch.randn(5, 2, 4), torch.randn(9, 2, 4)
    memory_bank, enc_state = encoder(src)
    dec_state = enc_state[0]
    for j in range(0, tgt.shape[0] - 1, trunc_size):
        context, loss = memory_bank.mean(0), 0  # BUG
        # FIX: memory_bank, _ = encoder(src); context, loss = memory_bank.mean(0), 0
        for t in range(j, min(j + trunc_size, tgt.shape[0] - 1)):
            dec_state = decoder(torch.cat([tgt[t], context], 1), dec_state)
            loss = loss + ((generator(dec_state) - tgt[t + 1]) ** 2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        dec_state = dec_state.detach()
