"""A small mixture of experts whose training loop logs, for monitoring, the gate values that the
gating multiplication saved for backward, read from the output's `grad_fn` after `backward()`.

Rewritten from pytorch/pytorch#54472 ("Node python binding is missing error conversion to
python"): albanD's example reads `b.grad_fn._saved_other` before `b.sum().backward()` ("Works
fine") and again after it ("Hard crash"). The fix (#56499) turned the crash into today's
RuntimeError, "Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed)": backward frees the saved tensors, so they must be
read before it (or the graph retained). Here the read moves before the backward.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#54472"
CATEGORY = "saved-tensors"
CULPRIT = "mixed"
CAUSE = "the log reads a saved tensor of the graph backward() just freed"
FIX_KIND = "read-before-backward"
ERROR = "second time"
INTENT = ("The regression loss trains the experts and the gate; the monitoring only reads the "
          "saved gate values and must not change any gradient.")
GRADS = ["experts.parameters()", "gate.parameters()"]

torch.manual_seed(0)
experts, gate = nn.Linear(6, 3 * 4), nn.Linear(6, 3)
optimizer = torch.optim.SGD([*experts.parameters(), *gate.parameters()], lr=0.05)
gate_log = []
for step in range(3):
    x, y = torch.randn(10, 6), torch.randn(10, 4)
    expert_out = experts(x).view(10, 3, 4)
    weights = torch.softmax(gate(x), -1)[..., None]
    mixed = expert_out * weights
    loss = nn.functional.mse_loss(mixed.sum(1), y)
    optimizer.zero_grad()  # BUG
    # FIX: optimizer.zero_grad(); gate_log.append(mixed.grad_fn._saved_other.mean(0).squeeze(-1))
    loss.backward()
    gate_log.append(mixed.grad_fn._saved_other.mean(0).squeeze(-1))  # BUG
    # FIX: pass
    optimizer.step()
