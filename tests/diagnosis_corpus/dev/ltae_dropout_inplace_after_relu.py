"""Crop-type classification of satellite image time series with a Lightweight Temporal Attention
Encoder (L-TAE, torchgeo.models.LTAE): layer norm, projection, positional encoding, multi-head
attention, a mean over time, then an MLP of Linear, BatchNorm and ReLU(inplace=True), a dropout and
an output layer norm; a linear classifier on the embedding.

Rewritten from torchgeo/torchgeo#3735 ("Bug in LTAE: inplace operation breaks backpropagation"):
"While training the LTAE model, backpropagation fails with an in-place modification error",
"[torch.FloatTensor [128, 32]], which is output 0 of ReluBackward0, is at version 2; expected version
1"; the fix, merged as torchgeo/torchgeo#3737, "Removed `inplace=True` from `nn.Dropout` layers in
`LTAE`" (the reference implementation has none; a maintainer had suggested it "to reduce mem usage
but if it's needed for backprop then yes we should merge this"). The in-place ReLU is harmless
here; the dropout after it rewrites the ReLU's output, which ReLU saved for its backward.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "torchgeo/torchgeo#3735"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the encoder's Dropout(inplace=True) rewrites the in-place ReLU's saved output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The classification loss trains the whole temporal encoder (projection, attention, MLP and "
          "norms) and the classifier.")
GRADS = ["encoder.inproj.weight", "encoder.attention.in_proj_weight", "encoder.mlp[0].weight",
         "encoder.mlp[1].weight", "encoder.outlayernorm.weight", "classifier.parameters()"]   # biases before a norm get no grad


class LTAE(nn.Module):
    def __init__(self, in_channels=10, d_model=16, n_head=4, n_neurons=(16, 8), dropout=0.2, T=1000, max_len=6):
        super().__init__()
        self.inlayernorm, self.inproj = nn.LayerNorm(in_channels), nn.Linear(in_channels, d_model)
        position, div = torch.arange(max_len)[:, None], torch.exp(torch.arange(0, d_model, 2) * (-math.log(T) / d_model))
        self.register_buffer('pe', torch.stack([torch.sin(position * div), torch.cos(position * div)], -1).flatten(1))
        self.pe_dropout = nn.Dropout(dropout)
        self.attention = nn.MultiheadAttention(d_model, n_head, dropout=dropout, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_neurons[0], n_neurons[1]), nn.BatchNorm1d(n_neurons[1]), nn.ReLU(inplace=True))
        self.dropout = nn.Dropout(dropout, inplace=True)  # BUG
        # FIX: self.dropout = nn.Dropout(dropout)
        self.outlayernorm = nn.LayerNorm(n_neurons[-1])

    def forward(self, x):
        x = self.pe_dropout(self.inproj(self.inlayernorm(x)) + self.pe[: x.size(1)])
        attention_output, _ = self.attention(x, x, x)
        return self.outlayernorm(self.dropout(self.mlp(attention_output.mean(dim=1))))


torch.manual_seed(0)
encoder, classifier = LTAE(), nn.Linear(8, 3)
optimizer = torch.optim.Adam([*encoder.parameters(), *classifier.parameters()], lr=1e-3)
for step in range(2):
    series, crop = torch.randn(12, 6, 10), torch.randint(0, 3, (12,))
    loss = F.cross_entropy(classifier(encoder(series)), crop)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
