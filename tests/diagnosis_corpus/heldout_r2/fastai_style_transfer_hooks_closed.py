"""Neural style transfer with `SaveFeatures` forward hooks (fast.ai notebook dl2/style-transfer):
a style match, after which the hooks are closed, then a style transfer on a fresh image.
Rewritten from fastai/fastai#761 ("fix courses/dl2/style-transfer.ipynb"), which fixed "Trying to
backward through the graph a second time" "by reinitializing sfs" (stas00, merged). Closed hooks
record nothing, so `comb_loss` read the `o.features` left by the style match, whose graph its last
backward freed; new hooks make each step read this step's features.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "fastai/fastai#761"
CATEGORY = "computed-once"
CULPRIT = ["sfs[0].features", "sfs[1].features"]
CAUSE = "closed hooks leave the style run's features, whose graph was freed"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The combined content and style loss trains only the image being optimised, through "
          "this step's VGG features of it; the VGG weights stay fixed.")
GRADS = "opt_img"

class SaveFeatures:
    features = None
    def __init__(self, m): self.hook = m.register_forward_hook(self.hook_fn)
    def hook_fn(self, module, input, output): self.features = output
    def close(self): self.hook.remove()

def gram(x):
    x = x.view(x.size(0) * x.size(1), -1)
    return x @ x.t() / x.numel()

def comb_loss(x, content_weight):
    m_vgg(x)
    outs = [o.features for o in sfs]
    return content_weight * F.mse_loss(outs[1], targ_vs[1]) + sum(F.mse_loss(gram(o), gram(s)) for o, s in zip(outs, targ_styles))

def fit(content_weight):
    opt_img = torch.rand(1, 3, 16, 16).requires_grad_()
    optimizer = torch.optim.Adam([opt_img], lr=0.05)
    for it in range(2):
        optimizer.zero_grad()
        comb_loss(opt_img, content_weight).backward()
        optimizer.step()
    return opt_img

torch.manual_seed(0)
m_vgg = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)).eval().requires_grad_(False)
block_ends, img, style_img = [1, 4], torch.rand(1, 3, 16, 16), torch.rand(1, 3, 16, 16)
sfs = [SaveFeatures(m_vgg[idx]) for idx in block_ends]
m_vgg(img)
targ_vs = [o.features.clone() for o in sfs]
m_vgg(style_img)
targ_styles = [o.features.clone() for o in sfs]
opt_img = fit(content_weight=0)                 # style match, then the hooks are closed
for sf in sfs:
    sf.close()
opt_img = fit(content_weight=10)  # BUG
# FIX: sfs = [SaveFeatures(m_vgg[idx]) for idx in block_ends]; opt_img = fit(content_weight=10)
