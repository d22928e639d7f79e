"""An LSTM classifier that stores its (h, c) on the module and passes it to the next batch.

Rewritten from sgadgil6/cnslab_fmri#4: `loss.backward()` broke in run_training_lstm.py and
retain_graph=True ran out of memory; the fix given in the thread (the maintainer asked for it as
a pull request) calls `self.lstm(x)` without the stored hidden state, so every batch starts from
a fresh zero state ("you don't need to pass hidden layer state").
"""
import torch
import torch.nn as nn

SOURCE = "sgadgil6/cnslab_fmri#4"
CATEGORY = "carried-state"
CULPRIT = "model.hidden"
CAUSE = "each batch starts from the stored state of the previous batch"
FIX_KIND = "reset-per-episode"
ERROR = "second time"


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim=8, input_dim=5):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = (torch.randn(1, 4, hidden_dim), torch.randn(1, 4, hidden_dim))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x, self.hidden)  # BUG
        # FIX: lstm_out, self.hidden = self.lstm(x)
        return torch.sigmoid(self.linear(lstm_out[:, -1, :]))


torch.manual_seed(0)
model = fMRI_LSTM()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for batch in range(3):
    x, y = torch.randn(4, 6, 5), torch.randint(0, 2, (4, 1)).float()
    loss = nn.functional.binary_cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
