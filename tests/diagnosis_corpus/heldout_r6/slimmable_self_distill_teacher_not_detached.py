"""Slimmable-network training with the sandwich rule (AutoSlim in mmrazor): each step trains the
widest subnet on the labels, then narrower subnets of the same weights to match the widest one's
outputs (self-distillation). A forward hook of the distiller records the teacher's output by module
name while the widest subnet runs.

Rewritten from open-mmlab/mmrazor#100 ("detach output from teacher"): "When using Self Distiller with
Channel Wise Distill, there would be a backward exception due to the tensor from teacher is not
detached. The PR fixed this bug." The maintainer agreed and asked for it to be switchable only for
"users who will train both teacher and student at the same time" (SingleTeacherDistiller's
`teacher_trainable`). The widest subnet's backward frees its graph; the first distillation loss then
backwards into it through the recorded output. Retaining it would pull the teacher towards students.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "open-mmlab/mmrazor#100"
CATEGORY = "two-backwards"
CULPRIT = "teacher_outputs['head']"
CAUSE = "the recorded teacher output keeps the widest subnet's graph, freed by its backward"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The label loss trains the widest subnet and each distillation loss trains a narrower subnet "
          "towards the widest one's outputs; those outputs are targets and are not trained towards the students.")
GRADS = "model.parameters()"


class SlimNet(nn.Module):     # one set of weights; a subnet uses the first `width` hidden units
    def __init__(self, width=16):
        super().__init__()
        self.fc, self.head, self.width = nn.Linear(10, width), nn.Linear(width, 4), width

    def forward(self, x):
        h = F.relu(F.linear(x, self.fc.weight[:self.width], self.fc.bias[:self.width]))
        wide = self.width == self.head.in_features
        return self.head(h) if wide else F.linear(h, self.head.weight[:, :self.width], self.head.bias)


torch.manual_seed(0)
model, teacher_outputs = SlimNet(), {}


def record(module, inputs, output):   # the distiller's hook on the teacher's head
    teacher_outputs['head'] = output  # BUG
    # FIX: teacher_outputs['head'] = output.detach()


model.head.register_forward_hook(record)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(8, 10), torch.randint(0, 4, (8,))
    optimizer.zero_grad()
    model.width = 16                   # the widest subnet, trained on the labels
    F.cross_entropy(model(x), y).backward()
    for width in (4, 8):               # narrower subnets, distilled from the widest one
        model.width = width
        kd = F.kl_div(F.log_softmax(model(x), 1), F.softmax(teacher_outputs['head'], 1), reduction='batchmean')
        kd.backward()
    optimizer.step()
