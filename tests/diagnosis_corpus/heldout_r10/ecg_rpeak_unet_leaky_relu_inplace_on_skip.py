"""R-peak detection in ECG with a 1-D U-Net (RPNet): the first encoder stage ends in an
inception-residual block whose last op is a ReLU; the next stage opens with
`nn.LeakyReLU(0.2, inplace=True)`, which overwrites that output (also the skip connection `en1`).

Rewritten from acrarshin/RPNet#6 ("BUG:Fix_backward_loss_issue"): "Setting inplace=True for the
ReLU prevent backward loss calculation in pytorch and causes issue #5"; the pull request removes
every `inplace=True` from the encoder's LeakyReLUs, and the maintainer merged it: "Yes, this fix
does the trick." The ReLU's backward needs its own output, changed in place.
"""
import torch
import torch.nn as nn

SOURCE = "acrarshin/RPNet#6"
CATEGORY = "inplace"
CULPRIT = "en1"
CAUSE = "an inplace LeakyReLU opening the next stage overwrites the ReLU output saved for backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The distance-map regression loss trains the whole U-Net: both encoder stages, the "
          "residual blocks and the decoder.")
GRADS = "model.parameters()"


class IncResBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1x1 = nn.Conv1d(planes, planes, 1, bias=False)
        self.branch = nn.Sequential(nn.Conv1d(planes, planes, 5, padding=2), nn.BatchNorm1d(planes))
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.branch(x)
        out += self.conv1x1(x)
        return self.relu(out)


torch.manual_seed(0)
model = nn.ModuleDict({
    "e1": nn.Sequential(nn.Conv1d(1, 8, 4, stride=2, padding=1), nn.BatchNorm1d(8), nn.LeakyReLU(0.2),
                        IncResBlock(8)),
    "e2": nn.Sequential(
        nn.LeakyReLU(0.2, inplace=True),  # BUG
        # FIX: nn.LeakyReLU(0.2),
        nn.Conv1d(8, 16, 4, stride=2, padding=1), nn.BatchNorm1d(16), IncResBlock(16)),
    "d1": nn.Sequential(nn.LeakyReLU(0.2), nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1), nn.BatchNorm1d(8)),
    "out_l": nn.Sequential(nn.LeakyReLU(0.2), nn.ConvTranspose1d(16, 1, 4, stride=2, padding=1)),
})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
ecg, distance_map = torch.randn(4, 1, 64), torch.rand(4, 1, 64)
for epoch in range(2):
    en1 = model["e1"](ecg)
    en2 = model["e2"](en1)
    pred = model["out_l"](torch.cat([en1, model["d1"](en2)], 1))
    loss = nn.functional.smooth_l1_loss(pred, distance_map)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
