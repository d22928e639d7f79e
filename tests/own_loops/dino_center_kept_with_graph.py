"""DINO-style self-distillation: the student matches the teacher's sharpened, centred output; the
centre is a running mean of the teacher's outputs kept on the loss module. The teacher's weights are
an EMA of the student's (requires_grad was left on). Training crashes at the second step."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The cross-entropy trains the student only; the centre is a running statistic, a constant to the "
          "loss, and the teacher is not trained by it.")
GRADS = "student.parameters()"
RULE = "carried-across-steps"
KIND = "detach-carried"


class DINOLoss(nn.Module):
    def __init__(self, dim, momentum=0.9):
        super().__init__()
        self.momentum = momentum
        self.center = torch.zeros(1, dim)

    def forward(self, s_out, t_out):
        t = F.softmax((t_out - self.center) / 0.04, dim=1)
        loss = -(t * F.log_softmax(s_out / 0.1, dim=1)).sum(1).mean()
        self.center = self.center * self.momentum + t_out.mean(0, keepdim=True) * (1 - self.momentum)  # BUG
        # FIX: self.center = (self.center * self.momentum + t_out.mean(0, keepdim=True) * (1 - self.momentum)).detach()
        return loss


torch.manual_seed(0)
student = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 16))
teacher = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 16))
teacher.load_state_dict(student.state_dict())
criterion, opt = DINOLoss(16), torch.optim.SGD(student.parameters(), lr=0.05)
for _step in range(2):
    x = torch.randn(8, 10)
    loss = criterion(student(x + 0.1 * torch.randn_like(x)), teacher(x))
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pt, ps in zip(teacher.parameters(), student.parameters()):
            pt.mul_(0.99).add_(ps, alpha=0.01)
