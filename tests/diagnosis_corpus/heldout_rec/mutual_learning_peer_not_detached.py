"""Deep mutual learning: two classifiers, each trained on its labels plus a KL term towards the
other's prediction, each with its own optimizer, stepped one after the other.

Rewritten from chxy95/Deep-Mutual-Learning#5 ("Trying to backward through the graph a second time,
but the buffers have already been freed. Specify retain_graph=True when calling backward the first
time."): the reporter asked whether `retain_graph=True` is the right fix and later answered it
himself, agreed by the next commenter: "check whether the teacher model's output is detached from
the graph `teacher_out = teacher_out.detach()`". The peer's prediction is a target, not something
the KL term should train. Retaining instead would let net1's KL term train net2, and net2's
backward would then meet net1's weights already changed by opt1.step() (the in-place error).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "chxy95/Deep-Mutual-Learning#5"
CATEGORY = "two-backwards"
CULPRIT = "out2"
CAUSE = "net1's KL term backwards through net2's output, freeing it before net2's loss"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("Each network's loss trains that network only (loss1 net1, loss2 net2): its KL term "
          "treats the other network's prediction as a fixed target.")
GRADS = ["net1.parameters()", "net2.parameters()"]

torch.manual_seed(0)
net1 = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
net2 = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt1 = torch.optim.SGD(net1.parameters(), lr=0.1, momentum=0.9)
opt2 = torch.optim.SGD(net2.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
    out1, out2 = net1(x), net2(x)
    kl1 = F.kl_div(F.log_softmax(out1, 1), F.softmax(out2, 1), reduction="batchmean")  # BUG
    # FIX: kl1 = F.kl_div(F.log_softmax(out1, 1), F.softmax(out2.detach(), 1), reduction="batchmean")
    loss1 = F.cross_entropy(out1, y) + kl1
    opt1.zero_grad()
    loss1.backward()
    opt1.step()
    kl2 = F.kl_div(F.log_softmax(out2, 1), F.softmax(out1, 1), reduction="batchmean")  # BUG
    # FIX: kl2 = F.kl_div(F.log_softmax(out2, 1), F.softmax(out1.detach(), 1), reduction="batchmean")
    loss2 = F.cross_entropy(out2, y) + kl2
    opt2.zero_grad()
    loss2.backward()
    opt2.step()
