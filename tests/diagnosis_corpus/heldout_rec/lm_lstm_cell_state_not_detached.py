"""A word-level LSTM language model trained with truncated backpropagation through time: the
(hidden, cell) state of one chunk starts the next, and only the hidden state is cut off.

Rewritten from dpressel/dliss-tutorial#1 ("Detach the hidden states"): the tutorial says "At
every step of training, we will detach our hidden states, preventing full backpropagation, but we
will initialize the new batch from our old hidden state", and detaches both h and c; asked why
both, the maintainer answered that this is truncated BPTT: the state starts each chunk from the
old one, but backpropagation stops at the chunk. Here only `h` is detached: `c` still carries the
previous chunk's graph, freed by its backward.
"""
import torch
import torch.nn as nn

SOURCE = "dpressel/dliss-tutorial#1"
CATEGORY = "carried-state"
CULPRIT = "hidden"
CAUSE = "the LSTM's cell state carries the previous chunk's freed graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each chunk's loss trains the language model through that chunk only; the state "
          "carried in from the previous chunk (both h and c) is a starting value, not trained through.")
GRADS = "model.parameters()"


class LM(nn.Module):
    def __init__(self, vocab=30, d=16):
        super().__init__()
        self.emb, self.rnn, self.out = nn.Embedding(vocab, d), nn.LSTM(d, d, batch_first=True), nn.Linear(d, vocab)

    def forward(self, x, hidden):
        y, hidden = self.rnn(self.emb(x), hidden)
        return self.out(y), hidden


torch.manual_seed(0)
model = LM()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
stream = torch.randint(0, 30, (4, 41))
hidden = (torch.zeros(1, 4, 16), torch.zeros(1, 4, 16))
for i in range(0, 40, 10):
    x, y = stream[:, i:i + 10], stream[:, i + 1:i + 11]
    h, c = hidden
    hidden = (h.detach(), c)  # BUG
    # FIX: hidden = (h.detach(), c.detach())
    logits, hidden = model(x, hidden)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 30), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
