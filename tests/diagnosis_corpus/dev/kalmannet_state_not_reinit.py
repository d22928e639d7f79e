"""A learned Kalman filter (KalmanNet-style) trained on sequences, whose posterior state is not
re-initialised at the start of each training sequence.

Rewritten from KalmanNet/KalmanNet_TSP#10 ("Each iteration does not update the information of
the previous moment"): the maintainer explains the training loop: "At the beginning of each
iteration, we init the model with x_0, using self.model.InitSequence(self.ssModel.m1x_0)"; each
sequence is filtered from its own initial state.
"""
import torch
import torch.nn as nn

SOURCE = "KalmanNet/KalmanNet_TSP#10"
CATEGORY = "filter-solver"
CULPRIT = "model.m1x_posterior"
CAUSE = "the filter's posterior from the previous sequence starts the next one"
FIX_KIND = "reset-per-episode"
ERROR = "second time"


class KalmanNet(nn.Module):
    def __init__(self, F, H):
        super().__init__()
        self.F, self.H = F, H
        self.gain = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))
        self.m1x_posterior = torch.zeros(2)

    def InitSequence(self, m1x_0):
        self.m1x_posterior = m1x_0

    def forward(self, y):
        m1x_prior = self.F @ self.m1x_posterior
        innovation = y - self.H @ m1x_prior
        K = self.gain(torch.cat([innovation, m1x_prior[:1]])).view(2, 1)
        self.m1x_posterior = m1x_prior + (K * innovation).squeeze(1)
        return self.m1x_posterior


torch.manual_seed(0)
F_true, H_true = torch.tensor([[1.0, 1.0], [0.0, 1.0]]), torch.tensor([[1.0, 0.0]])
model = KalmanNet(F_true, H_true)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
m1x_0 = torch.zeros(2)
for j in range(3):
    x_true = torch.cumsum(torch.randn(10, 2) * 0.1, 0)
    y_training = x_true[:, :1] + 0.1 * torch.randn(10, 1)
    estimates = torch.stack([model(y_training[t]) for t in range(10)])  # BUG
    # FIX: model.InitSequence(m1x_0); estimates = torch.stack([model(y_training[t]) for t in range(10)])
    loss = ((estimates - x_true) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
