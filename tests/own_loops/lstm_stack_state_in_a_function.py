"""A two-layer stack of LSTM cells trained chunk by chunk (truncated backpropagation through time)
in a function that returns the state it reached; the state, a list of (h, c) per layer, goes into
the next chunk with the graph of this one. Inside the function many names hold parts of it (`h`,
`c`, `inp`, `new`, `state`): the state kept is the list, once."""
import torch
import torch.nn as nn

INTENT = "Each chunk's loss trains the cells and the head through that chunk only; the state carried in is a starting value."
GRADS = ["cells.parameters()", "head.parameters()"]
RULE = "carried-across-steps"
KIND = "detach-carried"
torch.manual_seed(0)
cells = nn.ModuleList([nn.LSTMCell(4, 8), nn.LSTMCell(8, 8)])
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*cells.parameters(), *head.parameters()], lr=0.1)
state = [(torch.zeros(2, 8), torch.zeros(2, 8)) for _ in cells]
def train_chunk(xs, state):
    loss = 0
    for x in xs:
        inp = x
        new = []
        for cell, (h, c) in zip(cells, state):
            h, c = cell(inp, (h, c))
            new.append((h, c))
            inp = h
        state = new
        loss = loss + head(inp).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return state  # BUG
    # FIX: return [tuple(t.detach() for t in s) for s in state]
stream = torch.randn(9, 2, 4)
for t in range(0, 9, 3):
    state = train_chunk(stream[t:t + 3], state)
