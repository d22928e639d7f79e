"""Meta-Weight-Net (bilevel sample reweighting): a network maps each example's loss to a weight; the
validation loss after a virtual step (create_graph=True) trains it, then the classifier steps.

Rewritten from xjtushujun/meta-weight-net#8 ("计算图问题", a computation-graph problem): after
porting the repository's MetaModule ResNet, `loss.backward()` raised "Trying to backward through
the graph a second time" even with retain_graph=True. The poster's answer in the thread: "sorry, it
was my problem, I had not told meta_model and model apart" (没有识别好meta_model和model的区别).
The repository takes the virtual step on `meta_model`, a fresh copy loaded from `model` in every
iteration; taken on `model`, it leaves the classifier's weights holding a graph the meta backward freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "xjtushujun/meta-weight-net#8"
CATEGORY = "meta-learning"
CULPRIT = ["model.w1", "model.b1", "model.w2", "model.b2"]
CAUSE = "the virtual meta step is taken on the classifier itself, not on its copy"
FIX_KIND = "reset-per-episode"
ERROR = "second time"
INTENT = ("The validation loss after a virtual step of a copy of the classifier trains only the weighting network; "
          "the weighted training loss trains the classifier, with the example weights as constants.")
GRADS = ["model.params()", "vnet.parameters()"]


class MetaNet:   # the repository's MetaModule, reduced: weights kept as plain tensors it can replace
    names = ("w1", "b1", "w2", "b2")
    def __init__(self):
        self.w1, self.b1 = (torch.randn(10, 16) * 0.3).requires_grad_(), torch.zeros(16, requires_grad=True)
        self.w2, self.b2 = (torch.randn(16, 3) * 0.3).requires_grad_(), torch.zeros(3, requires_grad=True)
    def params(self):
        return [getattr(self, n) for n in self.names]
    def update_params(self, lr_inner, source_params):
        for n, grad in zip(self.names, source_params):
            setattr(self, n, getattr(self, n) - lr_inner * grad)
    def load_state_dict(self, other):
        for n in self.names:
            setattr(self, n, getattr(other, n).detach().clone().requires_grad_())
    def __call__(self, x):
        return torch.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2


torch.manual_seed(0)
model, vnet = MetaNet(), nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
optimizer_model, optimizer_vnet = torch.optim.SGD(model.params(), lr=0.1), torch.optim.Adam(vnet.parameters(), lr=1e-3)
for iteration in range(2):
    (x, y), (x_val, y_val) = (torch.randn(8, 10), torch.randint(0, 3, (8,))), (torch.randn(8, 10), torch.randint(0, 3, (8,)))
    meta_model = model  # BUG
    # FIX: meta_model = MetaNet(); meta_model.load_state_dict(model)
    cost = F.cross_entropy(meta_model(x), y, reduction="none").view(-1, 1)
    grads = torch.autograd.grad((cost * vnet(cost)).mean(), meta_model.params(), create_graph=True)
    meta_model.update_params(0.1, grads)
    optimizer_vnet.zero_grad(), F.cross_entropy(meta_model(x_val), y_val).backward()
    optimizer_vnet.step()
    cost_w = F.cross_entropy(model(x), y, reduction="none").view(-1, 1)
    loss = (cost_w * vnet(cost_w.detach()).detach()).mean()   # the weights, under no_grad in the repository
    optimizer_model.zero_grad()
    loss.backward()
    optimizer_model.step()
