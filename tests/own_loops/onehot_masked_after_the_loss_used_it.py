"""A classifier whose loss builds a one-hot of the labels, uses it, then zeroes the rows of padded
examples in the same one-hot to count the classes it saw: the multiplication saved the one-hot,
and the count's write changed it before backward. The one-hot is made inside the loss function,
each call: writing it out of place (or into a copy) is the fix; it is not kept from step to step."""
import torch
import torch.nn.functional as F

INTENT = ("The cross-entropy of the real (unpadded) examples trains the classifier; the class counts "
          "are bookkeeping that trains nothing.")
GRADS = "net.parameters()"
RULE = "inplace-write"
KIND = "out-of-place"


def loss_and_counts(logits, labels, real):
    onehot = F.one_hot(labels, logits.shape[1]).float()
    picked = (logits.log_softmax(1) * onehot).sum(1)
    onehot[~real] = 0.0  # BUG
    # FIX: onehot = onehot.masked_fill(~real[:, None], 0.0)
    return -(picked * real).sum() / real.sum(), onehot.sum(0)


torch.manual_seed(0)
net = torch.nn.Linear(6, 4)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
seen = torch.zeros(4)
for _step in range(2):
    x, y = torch.randn(8, 6), torch.randint(0, 4, (8,))
    real = torch.arange(8) < 6
    loss, counts = loss_and_counts(net(x), y, real)
    seen += counts
    opt.zero_grad()
    loss.backward()
    opt.step()
