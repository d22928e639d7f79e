"""A GRU model that keeps its hidden state in a private attribute and feeds it back every forward.

Rewritten from the PyTorch forum thread "How to initialize hidden state in GRU": the answer
(ptrblck) warns that "the computation graph will be attached to self.hidden so that the backward
call might try to backpropagate through multiple iterations" and advises to detach() the hidden
state in each forward pass. Here the attribute is private (`self._hidden`).
"""
import torch
import torch.nn as nn

SOURCE = "How to initialize hidden state in GRU"
CATEGORY = "carried-state"
CULPRIT = "model._hidden"
CAUSE = "the hidden state kept on the module carries the previous batch's graph"
FIX_KIND = "detach-carried"
ERROR = "second time"


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 6, batch_first=True)
        self.head = nn.Linear(6, 1)
        self._hidden = torch.zeros(1, 2, 6)

    def forward(self, x):
        out, self._hidden = self.gru(x, self._hidden)  # BUG
        # FIX: out, self._hidden = self.gru(x, self._hidden.detach())
        return self.head(out[:, -1])


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in range(3):
    x, y = torch.randn(2, 4, 3), torch.randn(2, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
