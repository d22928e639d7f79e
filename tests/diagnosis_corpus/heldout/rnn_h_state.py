"""RNN regression that carries its hidden state from one batch to the next.

Rewritten from MorvanZhou/PyTorch-Tutorial#57 ("403: question about h_state = h_state.data"):
commenting out the tutorial's `h_state = h_state.data` raises the error; the tutorial's line
(cutting the carried state off the old graph) is the fix.
"""
import torch
import torch.nn as nn

SOURCE = "MorvanZhou/PyTorch-Tutorial#57"
CATEGORY = "carried-state"
CULPRIT = "h_state"
CAUSE = "hidden state carried across batches keeps the freed graph"
FIX_KIND = "detach-carried"
ERROR = "second time"


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(input_size=1, hidden_size=8, batch_first=True)
        self.out = nn.Linear(8, 1)

    def forward(self, x, h_state):
        r_out, h_state = self.rnn(x, h_state)
        return self.out(r_out), h_state


torch.manual_seed(0)
rnn = RNN()
optimizer = torch.optim.Adam(rnn.parameters(), lr=0.02)
h_state = None
for step in range(4):
    steps = torch.linspace(step * 3.14, (step + 1) * 3.14, 10)
    x, y = torch.sin(steps).view(1, 10, 1), torch.cos(steps).view(1, 10, 1)
    prediction, h_state = rnn(x, h_state)  # BUG
    # FIX: prediction, h_state = rnn(x, h_state); h_state = h_state.detach()
    loss = nn.functional.mse_loss(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
