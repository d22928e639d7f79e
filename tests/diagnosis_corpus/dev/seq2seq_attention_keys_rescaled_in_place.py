"""An attention seq2seq model (fairseq-style encoder output `(keys, values)`) trained with teacher
forcing; at every decoding step the user rescales one feature of the encoder output by a learned
gate of the decoder state, a change they make "in decode time".

Rewritten from facebookresearch/fairseq#251 ("Problem About Changing the encoder_out"): "When I
want to change the encoder_out in decode time ... the error is `RuntimeError: one of the variables
needed for gradient computation has been modified by an inplace operation`", with the change
written `encoder_out[0][:,:,j] = do_something(encoder_out[0][:,:,j])`. The maintainer (huihuifan):
"You can't modify it in place like this, or PyTorch will have trouble automatically computing the
gradient. You should copy the variable and modify it. encoder_out does participate in gradient
calculation". The step's attention saved the keys that the index assignment then rewrites; the
copy is made out of place here (`torch.cat`), since assigning into a clone would still overwrite
the slice the multiplication saved.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "facebookresearch/fairseq#251"
CATEGORY = "inplace"
CULPRIT = "encoder_out[0]"
CAUSE = "an index assignment rescales the encoder keys that attention saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The next-token loss of every decoding step trains the encoder, the decoder, the "
          "attention output layer and the gate that rescales the keys.")
GRADS = ["encoder.parameters()", "decoder.parameters()", "out.parameters()", "gate"]

torch.manual_seed(0)
V, D, N, S, T = 11, 8, 2, 5, 4
src, tgt = torch.randint(V, (N, S)), torch.randint(V, (N, T + 1))
encoder = nn.ModuleDict({"emb": nn.Embedding(V, D), "rnn": nn.GRU(D, D, batch_first=True)})
decoder = nn.ModuleDict({"emb": nn.Embedding(V, D), "cell": nn.GRUCell(2 * D, D)})
out, gate = nn.Linear(2 * D, V), nn.Parameter(torch.randn(D))
params = [*encoder.parameters(), *decoder.parameters(), *out.parameters(), gate]
optimizer = torch.optim.Adam(params, lr=1e-3)
for step in range(2):
    x, h_n = encoder["rnn"](encoder["emb"](src))
    encoder_out = (x, x + encoder["emb"](src))   # (keys, values), as fairseq's fconv encoder returns them
    h, ctx, loss = h_n[0], torch.zeros(N, D), 0.0
    for t in range(T):
        keys, values = encoder_out
        h = decoder["cell"](torch.cat([decoder["emb"](tgt[:, t]), ctx], 1), h)
        attn = F.softmax(torch.bmm(keys, h[:, :, None]), dim=1)
        ctx = (attn * values).sum(1)
        loss = loss + F.cross_entropy(out(torch.cat([h, ctx], 1)), tgt[:, t + 1])
        g = torch.sigmoid(h @ gate)[:, None]
        encoder_out[0][:, :, 0] = encoder_out[0][:, :, 0] * g  # BUG
        # FIX: encoder_out = (torch.cat([encoder_out[0][:, :, :1] * g[:, :, None], encoder_out[0][:, :, 1:]], 2), encoder_out[1])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
