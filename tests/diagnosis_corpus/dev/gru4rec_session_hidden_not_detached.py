"""GRU4Rec, session-based recommendation with session-parallel mini-batches: each row of the batch
follows one user session, the GRU's hidden state is carried from one mini-batch (one click) to the
next, and the rows whose session ended are reset to zero.

Rewritten from yhs968/pyGRU4REC#8 ("detach"): the repository's training step carries the state as
`hidden = reset_hidden(hidden, mask).detach()` (modules/model.py), `reset_hidden` zeroing the rows of
the finished sessions by index assignment. Asked why it detaches, the maintainer answered that
backpropagating further would need to "detach **individual** rows of a tensor from the corresponding
computational graph", which "is impossible in PyTorch", so every mini-batch's loss stops at the state
it was handed. Without the `.detach()`, the second mini-batch's loss backwards into the first one's
graph, which its own backward already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "yhs968/pyGRU4REC#8"
CATEGORY = "carried-state"
CULPRIT = "hidden"
CAUSE = "the session-parallel hidden state is carried into the next mini-batch with its graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each mini-batch's next-item loss trains the GRU4Rec model (item embeddings, GRU, output layer) "
          "through this click only; the hidden state carried in from earlier clicks is a starting value, not trained through.")
GRADS = "model.parameters()"


class GRU4REC(nn.Module):
    def __init__(self, n_items=20, emb=8, hid=12):
        super().__init__()
        self.look_up, self.gru, self.h2o = nn.Embedding(n_items, emb), nn.GRU(emb, hid), nn.Linear(hid, n_items)

    def forward(self, items, hidden):
        output, hidden = self.gru(self.look_up(items).unsqueeze(0), hidden)
        return self.h2o(output.squeeze(0)), hidden


def reset_hidden(hidden, mask):
    if len(mask) != 0:
        hidden[:, mask, :] = 0    # the rows of the sessions that just ended
    return hidden


torch.manual_seed(0)
model = GRU4REC()
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
hidden = torch.zeros(1, 6, 12)
for click in range(3):
    items, targets = torch.randint(0, 20, (6,)), torch.randint(0, 20, (6,))
    mask = [r for r in range(6) if (r + click) % 4 == 0]      # sessions that started afresh at this click
    hidden = reset_hidden(hidden, mask)  # BUG
    # FIX: hidden = reset_hidden(hidden, mask).detach()
    logit, hidden = model(items, hidden)
    loss = F.cross_entropy(logit, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
