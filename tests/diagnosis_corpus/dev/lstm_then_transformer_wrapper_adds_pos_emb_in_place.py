"""A sequence model: an LSTM encodes the input frames, then an x-transformers
ContinuousTransformerWrapper (input projection, positional embedding, attention layers) runs on the
LSTM's outputs, and a regression loss trains both.

Rewritten from lucidrains/x-transformers#55 ("eliminate inplace operations"): "I experienced some
problems during backward pass when tried to stack transformers on top of LSTM if there were
inplace operations in transformers", with "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.FloatTensor [10, 20, 64]],
which is output 0 of CudnnRnnBackward". The merged fix replaces the wrapper's `x += self.pos_emb(x)`
by `x = x + self.pos_emb(x)`. With `dim_in == dim` the wrapper's input projection is the identity,
so the in-place add wrote into the LSTM's own output, which the LSTM had saved for its backward.
"""
import torch
import torch.nn as nn

SOURCE = "lucidrains/x-transformers#55"
CATEGORY = "inplace"
CULPRIT = "feats"
CAUSE = "the transformer wrapper adds its positional embedding in place into the LSTM output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The regression loss trains the LSTM, the transformer wrapper's positional embedding and "
          "attention layers, and the output head together.")
GRADS = ["rnn.parameters()", "transformer.parameters()", "head.parameters()"]


class ContinuousTransformerWrapper(nn.Module):   # the library's wrapper, reduced
    def __init__(self, dim=16, max_seq_len=32):
        super().__init__()
        self.project_in = nn.Identity()          # dim_in == dim
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.attn_layers = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, x):
        x = self.project_in(x)
        x += self.pos_emb(torch.arange(x.shape[1]))  # BUG
        # FIX: x = x + self.pos_emb(torch.arange(x.shape[1]))
        return self.attn_layers(x)


torch.manual_seed(0)
rnn = nn.LSTM(input_size=16, hidden_size=16, num_layers=1, batch_first=True)
transformer = ContinuousTransformerWrapper()
head = nn.Linear(16, 1)
optimizer = torch.optim.Adam([*rnn.parameters(), *transformer.parameters(), *head.parameters()], lr=1e-3)
for step in range(2):
    frames, target = torch.randn(3, 10, 16), torch.randn(3, 10, 1)
    feats, _ = rnn(frames)
    out = transformer(feats)
    loss = (head(out) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
