"""A YOLOv7-style detection head in inference form (the grid decode of xy and wh) used to craft an
adversarial patch: the loss is the mean objectness of the decoded boxes, and its gradient with respect
to the patch is what the attack follows.
Rewritten from WongKinYiu/yolov7#1527 ("Backpropagation Error. RuntimeError: one of the variables
needed for gradient computation has been modified by an inplace operation ... output 0 of
SigmoidBackward0"), raised while generating an adversarial example. The fix given in the thread: "I
managed to fix it! There is an in-place operation in models/yolo.py": the Detect head does
`y = x[i].sigmoid()` and then writes `y[..., 0:2] = ...` and `y[..., 2:4] = ...` into the sigmoid's
output, which its backward needs. The fix builds xy and wh as new tensors and concatenates them, as
later YOLO heads do (`y = torch.cat((xy, wh, conf), 4)`). The writer is inside the model's head.
"""
import torch
import torch.nn as nn

SOURCE = "WongKinYiu/yolov7#1527"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the head writes decoded xy and wh into the sigmoid's output, saved for its backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The objectness loss trains only the adversarial patch, through the frozen detector; "
          "the detector's weights are not trained.")
GRADS = "patch"


class Detect(nn.Module):
    def __init__(self, ch=8, na=3, nc=2, stride=8.0):
        super().__init__()
        self.na, self.no, self.stride = na, nc + 5, stride
        self.m = nn.Conv2d(ch, na * self.no, 1)
        self.anchor_grid = torch.tensor([10.0, 13.0]).view(1, 1, 1, 1, 2)

    def forward(self, x):
        x = self.m(x)
        bs, _, ny, nx = x.shape
        x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        grid = torch.stack(torch.meshgrid(torch.arange(nx), torch.arange(ny), indexing="xy"), 2).view(1, 1, ny, nx, 2).float()
        y = x.sigmoid()
        y[..., 0:2] = (y[..., 0:2] * 2.0 - 0.5 + grid) * self.stride  # BUG
        # FIX: xy = (y[..., 0:2] * 2.0 - 0.5 + grid) * self.stride
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid  # BUG
        # FIX: y = torch.cat((xy, (y[..., 2:4] * 2) ** 2 * self.anchor_grid, y[..., 4:]), -1)
        return y.view(bs, -1, self.no), x


torch.manual_seed(0)
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.SiLU())
model = nn.Sequential(backbone, Detect()).eval().requires_grad_(False)
image = torch.rand(1, 3, 32, 32)
patch = torch.full((1, 3, 8, 8), 0.5, requires_grad=True)
optimizer = torch.optim.Adam([patch], lr=0.03)
for step in range(3):
    patched = image.clone()
    patched[:, :, 12:20, 12:20] = patch
    pred, _ = model(patched)
    loss = pred[..., 4].mean()         # the objectness of every box: the attack lowers it
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
