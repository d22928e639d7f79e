"""Two-stage training: an autoencoder is trained first, then the whole training set is encoded
once and a small classifier is trained on the codes in mini-batches.

Rewritten from the page "Understanding PyTorch's RuntimeError: Backward Through the Graph a
Second Time" (devgem.io): despite "ensuring that loss.backward() is executed once per iteration",
the classifier's loop fails; "The issue often arises when dealing with tensors that are outputs
from another computation graph, such as those from an autoencoder model", and the fix it gives
encodes the data with `autoencoder.eval()` and `with torch.no_grad(): # This line is crucial`.
Every mini-batch slices the same encoded tensor, so each backward reaches the encoder's graph,
which the first backward freed. Detached codes equal codes encoded under no_grad.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Understanding PyTorch's RuntimeError: Backward Through the Graph a Second Time"
CATEGORY = "computed-once"
CULPRIT = "X_train_encoded"
CAUSE = "the training set is encoded once with the encoder's graph, before the classifier's loop"
FIX_KIND = "detach-input"
ERROR = "second time"
INTENT = ("The classification loss trains only the classifier on fixed codes; the autoencoder, "
          "trained in the first stage, must not be trained by it.")
GRADS = "classifier.parameters()"


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.decoder = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4)), nn.Linear(4, 12)

    def forward(self, x):
        z = self.encoder(x)
        return z, F.mse_loss(self.decoder(z), x)


torch.manual_seed(0)
X_train_tensor, y_train_tensor = torch.randn(32, 12), torch.randint(0, 3, (32,))
autoencoder = AutoEncoder()
ae_opt = torch.optim.Adam(autoencoder.parameters(), lr=1e-3)
for it in range(3):                                   # stage 1: the autoencoder
    _, recon_loss = autoencoder(X_train_tensor)
    ae_opt.zero_grad()
    recon_loss.backward()
    ae_opt.step()

autoencoder.eval()
X_train_encoded = autoencoder.encoder(X_train_tensor)  # BUG
# FIX: X_train_encoded = autoencoder.encoder(X_train_tensor).detach()
classifier = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.Adam(classifier.parameters(), lr=1e-2)
batch_size = 8
for epoch in range(2):                                # stage 2: the classifier on the codes
    for start_ix in range(0, len(X_train_encoded), batch_size):
        out = classifier(X_train_encoded[start_ix:start_ix + batch_size])
        loss = F.cross_entropy(out, y_train_tensor[start_ix:start_ix + batch_size])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
