"""A word-level LSTM language model trained on one long token stream cut into windows, the LSTM
states of one window starting the next (truncated backpropagation through time).

Rewritten from yunjey/pytorch-tutorial#90 ("language model detach(states)"): a reader asks what the
line `states = detach(states)` of the tutorial's language model does ("why shouldn't states be
updated after every training step?"). The tutorial (after the code the example was taken from,
pytorch/examples' word_language_model) keeps the states from window to window but detaches them,
`def detach(states): return [state.detach() for state in states]`, before each forward. Without
it, the second window's backward runs on into the first window's graph, already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "yunjey/pytorch-tutorial#90"
CATEGORY = "carried-state"
CULPRIT = "states"
CAUSE = "the LSTM states carry the previous window's freed graph into this window"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The next-word loss of each window trains the embedding, the LSTM and the output layer "
          "through this window only; the states coming from the previous window are constants.")
GRADS = "model.parameters()"


def detach(states):
    return [state.detach() for state in states]


class RNNLM(nn.Module):
    def __init__(self, vocab_size=20, embed_size=8, hidden_size=16, num_layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        out, (h, c) = self.lstm(self.embed(x), h)
        return self.linear(out.reshape(-1, out.size(2))), (h, c)


torch.manual_seed(0)
batch_size, seq_length = 4, 5
ids = torch.randint(0, 20, (batch_size, 31))
model = RNNLM()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
states = (torch.zeros(1, batch_size, 16), torch.zeros(1, batch_size, 16))
for i in range(0, ids.size(1) - seq_length, seq_length):
    inputs, targets = ids[:, i:i + seq_length], ids[:, (i + 1):(i + 1) + seq_length]
    outputs, states = model(inputs, states)  # BUG
    # FIX: outputs, states = model(inputs, detach(states))
    loss = F.cross_entropy(outputs, targets.reshape(-1))
    model.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
