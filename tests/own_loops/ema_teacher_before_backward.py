"""A mean teacher: the student's features also go through the teacher's head, and the teacher's
weights follow the student's by an exponential moving average, updated in place before the
backward that still needs the teacher head's weights as the forward saw them. Writing the update
out of place (`tp = tp.mul(0.99)...`) would only rebind the loop's name: the teacher would stop
following the student, silently."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The loss trains the student only; the teacher follows the student by a moving average, "
          "once per step, from the weights the step's forward used.")
GRADS = "student.parameters()"
RULE = "inplace-write"
KIND = "no-data-write"


def ema_update(teacher, student, m=0.99):
    with torch.no_grad():
        for tp, sp in zip(teacher.parameters(), student.parameters()):
            tp.mul_(m).add_(sp, alpha=1 - m)


torch.manual_seed(0)
student = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
teacher = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
teacher.load_state_dict(student.state_dict())
teacher.requires_grad_(False)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(32, 8)
    feats = student[:2](x)
    t_on_s = teacher[2](feats)               # the student's features through the teacher's head
    loss = F.mse_loss(student[2](feats), t_on_s.detach()) + t_on_s.pow(2).mean()
    ema_update(teacher, student)  # BUG
    # FIX: pass
    opt.zero_grad()
    loss.backward()  # BUG
    # FIX: loss.backward(); ema_update(teacher, student)
    opt.step()
