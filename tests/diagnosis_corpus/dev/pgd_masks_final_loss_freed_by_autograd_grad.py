"""Stochastic parameter decomposition with an adversarial (PGD) loss: a weight is a sum of rank-one
components, each scaled by a mask in [0, 1]; PGD searches the masks that maximise the output error,
and the loss at the adversarial masks trains the components, added to a faithfulness loss.

Rewritten from goodfire-ai/spd#252 ("fix: Graph freed by pgd loss before backward", merged): "I
refactored the PGD losses to return (loss, n_examples, grad) so that there could be a single central
implementation of the gradient calculation ... Unfortunately this means that for the final forward
pass that we do to report of loss, we also call `torch.autograd.grad` which frees part of the graph.
this part of the graph is needed if the loss is used later in `.backward`". Fix: "Rearranges
computation so that we don't call `torch.autograd.grad` on the final loss output." Labelled
keep-graph: the graph the final loss needs must not be freed before the training backward.
"""
import torch
import torch.nn.functional as F

SOURCE = "goodfire-ai/spd#252"
CATEGORY = "two-backwards"
CULPRIT = "pgd_loss"
CAUSE = "the shared PGD helper's autograd.grad frees the final loss's graph"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The faithfulness loss and the loss at the adversarial masks train the components U and V; "
          "the masks are only searched by PGD and are not trained.")
GRADS = ["U", "V"]


def pgd_step_loss(x, target, masks):
    """The central helper: (loss, n_examples, grad of the loss with respect to the masks)."""
    loss = F.mse_loss(x @ (U * masks) @ V.t(), target)
    return loss, x.shape[0], torch.autograd.grad(loss, masks)[0]


torch.manual_seed(0)
W_target = torch.randn(6, 6)
U, V = torch.randn(6, 4).requires_grad_(), torch.randn(6, 4).requires_grad_()
optimizer = torch.optim.Adam([U, V], lr=1e-2)
for step in range(2):
    x = torch.randn(16, 6)
    target = x @ W_target
    masks = torch.rand(4, requires_grad=True)
    for pgd_iter in range(3):
        _, _, grad = pgd_step_loss(x, target, masks)
        with torch.no_grad():
            masks.add_(0.1 * grad.sign()).clamp_(0.0, 1.0)
    pgd_loss, n, _ = pgd_step_loss(x, target, masks)  # BUG
    # FIX: pgd_loss = F.mse_loss(x @ (U * masks) @ V.t(), target)
    faithfulness = F.mse_loss(U @ V.t(), W_target)
    loss = faithfulness + pgd_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
