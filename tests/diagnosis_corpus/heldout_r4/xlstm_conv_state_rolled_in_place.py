"""Training a small xLSTM-style language model in step mode: each token goes through the causal
convolution one step at a time, the convolution's window of past inputs (`conv_state`) carried from
token to token, and the next-token losses of the whole sequence backpropagate once.

Rewritten from NX-AI/xlstm#51 ("Bug Report: In-Place Operation Causes Gradient Error in
conv1d_step Function"): training raised "one of the variables needed for gradient computation has
been modified by an inplace operation: ... which is output 0 of torch::autograd::CopySlices, is at
version 38; expected version 36". The report traces it to two lines of the library's
`conv1d_step`, `conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=1))` and
`conv_state[:, -1:, :] = x`; the fix proposed in the thread (NX-AI/xlstm#82) updates `conv_state`
"by creating a new tensor". The previous step's `conv_state * conv1d_weight` saved the window that
the next step rolls and writes in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "NX-AI/xlstm#51"
CATEGORY = "inplace"
CULPRIT = "conv_state"
CAUSE = "conv1d_step rolls and writes the convolution window in place each token"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The next-token loss of the whole sequence trains the embedding, the causal convolution "
          "weights and the output head, through every step of the window.")
GRADS = ["embedding.weight", "conv1d_weight", "head.parameters()"]


def conv1d_step(x, conv_state, conv1d_weight):   # the library's step function, reduced
    conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=1))  # BUG
    # FIX: conv_state = torch.roll(conv_state, shifts=-1, dims=1)
    conv_state[:, -1:, :] = x  # BUG
    # FIX: conv_state = torch.cat([conv_state[:, :-1, :], x], dim=1)
    y = torch.sum(conv_state * conv1d_weight, dim=1, keepdim=True)
    return y, conv_state


torch.manual_seed(0)
vocab, dim, kernel_size = 16, 8, 4
embedding = nn.Embedding(vocab, dim)
conv1d_weight = nn.Parameter(torch.randn(kernel_size, dim) / kernel_size)
head = nn.Linear(dim, vocab)
optimizer = torch.optim.Adam([embedding.weight, conv1d_weight, *head.parameters()], lr=1e-3)
tokens = torch.randint(0, vocab, (2, 7))
conv_state = torch.zeros(2, kernel_size, dim)
loss = 0
for t in range(tokens.shape[1] - 1):
    y, conv_state = conv1d_step(embedding(tokens[:, t:t + 1]), conv_state, conv1d_weight)
    loss = loss + F.cross_entropy(head(y[:, 0]), tokens[:, t + 1])
optimizer.zero_grad()
loss.backward()
optimizer.step()
