"""Discrimination-aware channel pruning (DCP): the network is cut into segments, each with an
auxiliary classifier and its own optimizers, and segment i+1 takes segment i's output as input.

Rewritten from SCUT-AILab/DCP#20 ("Inplace operation"): channel-pruning a ResNet-56 on torch 1.6
fails with "one of the variables needed for gradient computation has been modified by an inplace
operation", pointing at a conv of the network. The reporter found the fix in the auxiliary
trainer: "if I change `temp_input=temp_output` to `temp_input=temp_output.detach()` in
aux_trainer.py, it works". Each segment's loss is backwarded with `retain_graph=True` and that
segment's optimizers step at once; the next segment's loss then backwards through the earlier
segments, whose weights the step has changed in place. (Before torch 1.5 optimizers wrote through
`.data` and the version check missed it; those gradients into earlier segments were zeroed before
use anyway, so the detached input keeps what the code always trained.)
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "SCUT-AILab/DCP#20"
CATEGORY = "two-backwards"
CULPRIT = "segments[0][2].weight"
CAUSE = "the next segment's loss backwards into earlier segments already stepped by their optimizers"
FIX_KIND = "detach-at-use"
ERROR = "inplace"
INTENT = ("Each auxiliary loss trains only its own segment and its auxiliary classifier; a later "
          "segment's loss must not train the earlier segments whose output it takes as input.")
GRADS = ["segments.parameters()", "aux_fc.parameters()"]

torch.manual_seed(0)
segments = nn.ModuleList([
    nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU()),
    nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU()),
    nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU()),
])
aux_fc = nn.ModuleList([nn.Linear(16, 5) for _ in segments])
seg_optimizer = [torch.optim.SGD(s.parameters(), lr=0.1, momentum=0.9) for s in segments]
fc_optimizer = [torch.optim.SGD(f.parameters(), lr=0.1, momentum=0.9) for f in aux_fc]
for batch in range(2):
    images, labels = torch.randn(8, 12), torch.randint(0, 5, (8,))
    # forward through every segment and its auxiliary classifier
    losses, temp_input = [], images
    for i in range(len(segments)):
        temp_output = segments[i](temp_input)
        fcs_output = aux_fc[i](temp_output)
        losses.append(F.cross_entropy(fcs_output, labels))
        temp_input = temp_output  # BUG
        # FIX: temp_input = temp_output.detach()
    # backward and step segment by segment
    for i in range(len(segments)):
        seg_optimizer[i].zero_grad()
        fc_optimizer[i].zero_grad()
        losses[i].backward(retain_graph=True)
        fc_optimizer[i].step()
        seg_optimizer[i].step()
