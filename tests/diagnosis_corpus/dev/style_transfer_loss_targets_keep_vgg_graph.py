"""Neural style transfer as in the PyTorch tutorial: transparent ContentLoss and StyleLoss layers
in a pretrained CNN hold targets computed once from the content and the style image, and L-BFGS
optimises the input image. Rewritten from the blog post "PyTorch Style Transfer Tutorial" (Fangda
Han), on the tutorial's `self.target = target.detach()`: "we just want to back propagate through
the graph with input image, not the target image img. Otherwise PyTorch will try to back propagate
the graph twice, however the classical error will appear: RuntimeError: Trying to backward through
the graph a second time" (the tutorial: "this is a stated value, not a variable"); the style target
is detached the same way, `gram_matrix(target_feature).detach()`. The CNN's weights still require
grad (as the tutorial's loaded VGG did), so each target carries a graph through them.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "PyTorch Style Transfer Tutorial"
CATEGORY = "computed-once"
CULPRIT = ["content_loss.target", "style_loss.target"]
CAUSE = "the content and style targets keep the CNN graph freed by the first backward"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The content and style losses train only the input image, through its own features at "
          "every evaluation; the targets from the content and style images are constants.")
GRADS = "input_img"
def gram_matrix(x):
    b, c, h, w = x.shape
    f = x.view(b * c, h * w)
    return f @ f.t() / (b * c * h * w)
class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target  # BUG
        # FIX: self.target = target.detach()
    def forward(self, x):
        self.loss = F.mse_loss(x, self.target)
        return x
class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature)  # BUG
        # FIX: self.target = gram_matrix(target_feature).detach()
    def forward(self, x):
        self.loss = F.mse_loss(gram_matrix(x), self.target)
        return x


torch.manual_seed(0)
cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
content_img, style_img = torch.rand(1, 3, 12, 12), torch.rand(1, 3, 12, 12)
content_loss, style_loss = ContentLoss(cnn(content_img)), StyleLoss(cnn(style_img))
model, input_img = nn.Sequential(*cnn, content_loss, style_loss), content_img.clone().requires_grad_(True)
optimizer = torch.optim.LBFGS([input_img], max_iter=4)
for step in range(2):
    def closure():
        optimizer.zero_grad()
        model(input_img)
        loss = 1e4 * style_loss.loss + content_loss.loss
        loss.backward()
        return loss
    optimizer.step(closure)
