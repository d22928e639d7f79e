"""Neural style transfer as the 2017 PyTorch tutorial wrote it: each StyleLoss layer inserted into
the CNN has its own `backward()`, and the L-BFGS closure calls it on every loss layer in turn
(`style_score += sl.backward()`), all through the one graph of the input image. Rewritten from
pytorch/tutorials#166 ("Update neural_style_tutorial.py", merged: "replace `retain_variables` with
`retain_graph`"): the loss layers' `self.loss.backward(retain_graph=retain_graph)`, default True,
keep the shared graph for the next loss layer. Users of the original notebook met the removed
keyword (alexis-jacq/Pytorch-Tutorials#7); dropping the argument instead of renaming it (the bug is
ours, built from that fix) frees the shallow layers' buffers at the first loss layer's backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/tutorials#166"
CATEGORY = "two-backwards"
CULPRIT = None
CAUSE = "each loss layer's backward frees the shared CNN graph the next one needs"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("Every style loss layer trains only the input image, their gradients adding up in each "
          "L-BFGS evaluation; the CNN is fixed.")
GRADS = "input_img"


def gram_matrix(x):
    a, b, c, d = x.size()
    f = x.view(a * b, c * d)
    return f @ f.t() / (a * b * c * d)
class StyleLoss(nn.Module):
    def __init__(self, target, weight):
        super().__init__()
        self.target, self.weight = gram_matrix(target).detach() * weight, weight
    def forward(self, x):
        self.loss = F.mse_loss(gram_matrix(x) * self.weight, self.target)
        return x
    def backward(self):
        self.loss.backward()  # BUG
        # FIX: self.loss.backward(retain_graph=True)
        return self.loss


torch.manual_seed(0)
cnn = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 6, 3, padding=1), nn.ReLU())
cnn.requires_grad_(False)
style_img, content_img = torch.rand(1, 3, 10, 10), torch.rand(1, 3, 10, 10)
model, style_losses = nn.Sequential(), []
for i, layer in enumerate(cnn):
    model.add_module(str(i), layer)
    if isinstance(layer, nn.Conv2d):
        style_losses.append(StyleLoss(model(style_img), weight=1000.0))
        model.add_module(f"style_loss_{i}", style_losses[-1])
input_img = content_img.clone().requires_grad_(True)
optimizer = torch.optim.LBFGS([input_img], max_iter=3)
for step in range(2):
    def closure():
        optimizer.zero_grad()
        model(input_img)
        return sum(sl.backward() for sl in style_losses)
    optimizer.step(closure)
