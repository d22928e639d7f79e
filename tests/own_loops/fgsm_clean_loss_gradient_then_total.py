"""Adversarial training with FGSM on the input: the clean loss's backward gives the input gradient,
whose sign makes the adversarial batch; then the clean and adversarial losses are added and
backwarded for the step. Training crashes at the total loss's backward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The clean loss and the adversarial loss both train the whole classifier; the clean loss's "
          "gradient on the input also makes the perturbation.")
GRADS = "model.parameters()"
RULE = "reused-after-backward"
KIND = "retain-or-sum"

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _step in range(2):
    x, y = torch.randn(8, 10, requires_grad=True), torch.randint(0, 3, (8,))
    clean = F.cross_entropy(model(x), y)
    opt.zero_grad()
    clean.backward()  # BUG
    # FIX: clean.backward(retain_graph=True)
    x_adv = (x + 0.1 * x.grad.sign()).detach()
    total = clean + F.cross_entropy(model(x_adv), y)
    opt.zero_grad()
    total.backward()
    opt.step()
