"""A TabNet-style regressor for tabular data: an attentive transformer picks features with a
sparse mask at each decision step, the network returns its prediction and the masks' entropy
(`M_loss`), and the fit loop subtracts `lambda_sparse * M_loss` from the user's loss. The user
passes a custom RMSE loss, `torch.sqrt(mse + eps)`.

Rewritten from dreamquark-ai/tabnet#312 ("error with userdefine Loss": with `loss_fn=RMSELoss()`,
"RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor []], which is output 0 of SqrtBackward"). The maintainer's
fix, dreamquark-ai/tabnet#323 ("fix: custom loss using inplace operations"), replaced the library's
`loss -= self.lambda_sparse * M_loss` in `_train_batch` by `loss = loss - self.lambda_sparse * M_loss`:
sqrt saves its output for backward, and the in-place subtraction overwrote it. The user's loss is
the obvious suspect; the write is in the library's training step."""
import torch
import torch.nn as nn

SOURCE = "dreamquark-ai/tabnet#312"
CATEGORY = "inplace"
CULPRIT = "loss"
CAUSE = "the fit loop subtracts the sparsity term in place from the sqrt output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The RMSE loss minus the weighted mask entropy trains the whole network: the attentive "
          "transformer, the feature transformer and the head.")
GRADS = "network.parameters()"


class TinyTabNet(nn.Module):
    def __init__(self, n_features=6, n_d=8, n_steps=2):
        super().__init__()
        self.attentive = nn.ModuleList(nn.Linear(n_features, n_features) for _ in range(n_steps))
        self.feature = nn.Sequential(nn.Linear(n_features, n_d), nn.ReLU())
        self.head = nn.Linear(n_d, 1)

    def forward(self, x):
        out, M_loss, prior = 0, 0, torch.ones_like(x)
        for att in self.attentive:
            mask = torch.softmax(att(x) * prior, dim=-1)
            M_loss = M_loss + (-mask * torch.log(mask + 1e-15)).sum(-1).mean() / len(self.attentive)
            prior = prior * (1.3 - mask)
            out = out + self.feature(x * mask)
        return self.head(out), M_loss


def rmse_loss(y_pred, y_true):                          # the user's custom loss_fn
    return torch.sqrt(nn.functional.mse_loss(y_pred, y_true) + 1e-6)


torch.manual_seed(0)
network, lambda_sparse = TinyTabNet(), 1e-3
optimizer = torch.optim.Adam(network.parameters(), lr=2e-2)
for X, y in [(torch.randn(16, 6), torch.randn(16, 1)) for _ in range(2)]:   # _train_batch
    for param in network.parameters():
        param.grad = None
    output, M_loss = network(X)
    loss = rmse_loss(output, y)
    loss -= lambda_sparse * M_loss  # BUG
    # FIX: loss = loss - lambda_sparse * M_loss
    loss.backward()
    optimizer.step()
