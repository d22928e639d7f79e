"""Online knowledge distillation in a ring: each of three students learns the labels and, with a
KL term, the softened predictions of the next student in the ring; all predictions are computed
once per batch in a list, then each student takes its own step. Training crashes at the second student."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("Each student's loss trains only that student: the next student's softened prediction is a fixed "
          "target for its KL term.")
GRADS = ["students[0].parameters()", "students[1].parameters()", "students[2].parameters()"]
RULE = "computed-once"
KIND = "detach-input"

torch.manual_seed(0)
students = [nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4)) for _ in range(3)]
opts = [torch.optim.Adam(s.parameters(), lr=1e-3) for s in students]
for _batch in range(2):
    x, y = torch.randn(16, 20), torch.randint(0, 4, (16,))
    logits = [s(x) for s in students]
    for k, opt in enumerate(opts):
        target = F.softmax(logits[(k + 1) % 3] / 2.0, dim=1)  # BUG
        # FIX: target = F.softmax(logits[(k + 1) % 3].detach() / 2.0, dim=1)
        loss = F.cross_entropy(logits[k], y) + F.kl_div(F.log_softmax(logits[k] / 2.0, dim=1), target,
                                                        reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
