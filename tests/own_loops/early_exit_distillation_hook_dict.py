"""A network with early exits, trained as in multi-exit self-distillation: the last exit learns from
the labels, then each early exit learns to match the last exit's prediction, which a forward hook
keeps in a dict by exit name. Each loss gets its own backward (the exits are added one by one)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The label loss trains the trunk and the last exit; each distillation loss trains the trunk up "
          "to its early exit and that exit towards the last exit's prediction, which is a fixed target "
          "(the distillation losses do not train the last exit).")
GRADS = "net.parameters()"
RULE = "reused-after-backward"
KIND = "detach-input"


class MultiExit(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(12, 12) for _ in range(3))
        self.exits = nn.ModuleList(nn.Linear(12, 5) for _ in range(3))

    def forward(self, x, upto=3):
        for block in self.blocks[:upto]:
            x = torch.tanh(block(x))
        return self.exits[upto - 1](x)


kept = {}


def keep_final(module, inputs, output):
    kept["final"] = output  # BUG
    # FIX: kept["final"] = output.detach()


torch.manual_seed(0)
net = MultiExit()
net.exits[2].register_forward_hook(keep_final)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for _step in range(2):
    x, y = torch.randn(16, 12), torch.randint(0, 5, (16,))
    opt.zero_grad()
    F.cross_entropy(net(x), y).backward()
    for upto in (1, 2):
        early = net(x, upto)
        distill = F.kl_div(F.log_softmax(early, 1), F.softmax(kept["final"], 1), reduction="batchmean")
        distill.backward()
    opt.step()
