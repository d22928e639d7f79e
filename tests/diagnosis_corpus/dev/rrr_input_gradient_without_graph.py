"""Explanatory interactive learning with a "right for the right reasons" (RRR) loss: the classifier's
cross-entropy plus a penalty on its input gradients inside annotated regions it must not rely on.
The input gradients come from captum's gradient helper.

Rewritten from ml-research/NeSyXIL#3 ("autograd backward error"): training with the RRR loss failed
at `loss.backward()` with "Trying to backward through the graph a second time"; the maintainer:
"Have you installed the captum package as explained in our readme? We had to modify exactly one line
of code in captum such that the computational grap[h]..." (the reply is cut there in the copy read);
the repository's patched
captum/attr/_utils/gradient.py reads `grads = torch.autograd.grad(torch.unbind(outputs), inputs,
create_graph=True)` ("updated ... to retrieve the gradients of the explanations"), and its
rrr_loss.py takes the input gradients of the same log-probabilities as the answer loss. Without it
the gradient call frees the graph the answer loss still needs; `retain_graph=True` alone would run,
but the right-reason penalty would then train nothing.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "ml-research/NeSyXIL#3"
CATEGORY = "higher-order"
CULPRIT = "logits"
CAUSE = "the input-gradient call frees the graph the answer loss still needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The answer loss trains the classifier on the labels, and the right-reason penalty trains it, "
          "through its input gradients, to stop using the annotated confounding pixels.")
GRADS = "model.parameters()"


def compute_gradients(outputs, inputs):   # captum.attr._utils.gradient.compute_gradients
    return torch.autograd.grad(torch.unbind(outputs), inputs)  # BUG
    # FIX: return torch.autograd.grad(torch.unbind(outputs), inputs, create_graph=True)


def rrr_loss_function(A, X, y, logits, l2_grads=10.0):
    log_prob_ys = F.log_softmax(logits, dim=1)
    right_answer_loss = F.nll_loss(log_prob_ys, y)
    gradXes = compute_gradients(log_prob_ys.sum(1), (X,))[0]
    right_reason_loss = l2_grads * ((A * gradXes) ** 2).sum(dim=(1, 2, 3)).mean()
    return right_answer_loss + right_reason_loss


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Tanh(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
A = torch.zeros(6, 1, 8, 8)
A[..., :2, :2] = 1.0                       # annotated confounder: the top-left corner
for step in range(2):
    X, y = torch.randn(6, 1, 8, 8).requires_grad_(), torch.randint(0, 3, (6,))
    logits = model(X)
    loss = rrr_loss_function(A, X, y, logits)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
