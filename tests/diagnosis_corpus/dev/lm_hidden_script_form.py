"""Word-level language model training in script form: the loop lives in `def train()` and carries
the LSTM's (h, c) from one batch to the next.

Rewritten from LiyuanLucasLiu/LD-Net#6 ("What is repackage_hidden?"): the maintainer's answer,
"to detach the gradient of hidden (otherwise the backpropagation would has some error)"; the
training loop calls `hidden = repackage_hidden(hidden)` before every batch.
"""
import torch
import torch.nn as nn

SOURCE = "LiyuanLucasLiu/LD-Net#6"
CATEGORY = "carried-state"
CULPRIT = "hidden"
CAUSE = "the LSTM state carried across batches keeps the previous batch's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def train():
    torch.manual_seed(0)
    embed, lstm, decoder = nn.Embedding(20, 8), nn.LSTM(8, 8), nn.Linear(8, 20)
    params = [*embed.parameters(), *lstm.parameters(), *decoder.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.5)
    data = torch.randint(0, 20, (31, 2))
    hidden = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    for i in range(0, 30, 10):
        inputs, targets = data[i:i + 10], data[i + 1:i + 11]
        output, hidden = lstm(embed(inputs), hidden)  # BUG
        # FIX: output, hidden = lstm(embed(inputs), repackage_hidden(hidden))
        loss = nn.functional.cross_entropy(decoder(output).view(-1, 20), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


train()
