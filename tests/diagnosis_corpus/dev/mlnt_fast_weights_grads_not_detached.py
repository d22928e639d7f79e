"""Meta-learning based noise-tolerant training (MLNT) on noisy labels: several synthetic-noise copies of the labels each
give one fast-weight step, and a consistency loss asks the fast model to agree with a mean teacher (an EMA of the model).
Rewritten from LiJunnan1992/MLNT#8 ("Can't detach views in-place."): detaching the fast gradients in place fails on newer
torch; the maintainer: "Can you try tensor = tensor.detach()?". The reporter: "the first noise type iteration is ok. But
the second noise type it cannot compute `grads = torch.autograd.grad()`": "Trying to backward through the graph a second
time". Written as `grad = grad.detach()` inside `for grad in grads:`, only the loop variable is rebound; the fast weights
still take the gradients with their graph, and each consistency backward (one per noise iteration, as in the reporter's
version) frees the forward graph the next gradient needs. The gradients must enter the fast weights detached."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "LiJunnan1992/MLNT#8"
CATEGORY = "two-backwards"
CULPRIT = "grads"
CAUSE = "fast weights take the fast gradients with their graph into each consistency backward"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The class loss and the consistency losses train the student net (through the fast weights, with the fast "
          "gradients as constants); the mean teacher is only an EMA of the student and is not trained.")
GRADS = "net.parameters()"

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
tch_net = copy.deepcopy(net).requires_grad_(False)
optimizer = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
names = [n for n, _ in net.named_parameters()]
num_fast, meta_lr, alpha = 3, 0.2, 1.0
for batch_idx in range(2):
    inputs, targets = torch.randn(16, 10), torch.randint(0, 4, (16,))
    optimizer.zero_grad()
    outputs = net(inputs)
    class_loss = F.cross_entropy(outputs, targets)
    class_loss.backward(retain_graph=True)
    p_tch = F.softmax(tch_net(inputs), dim=1).detach()
    for i in range(num_fast):
        targets_fast = targets.clone()  # synthetic noise: swap some labels with random ones
        swap = torch.rand(16) < 0.3
        targets_fast[swap] = torch.randint(0, 4, (int(swap.sum()),))
        fast_loss = F.cross_entropy(outputs, targets_fast)
        grads = torch.autograd.grad(fast_loss, net.parameters(), create_graph=True, retain_graph=True)
        for grad in grads:
            grad = grad.detach()
        fast_weights = {n: p - meta_lr * g for n, p, g in zip(names, net.parameters(), grads)}  # BUG
        # FIX: fast_weights = {n: p - meta_lr * g.detach() for n, p, g in zip(names, net.parameters(), grads)}
        fast_out = torch.func.functional_call(net, fast_weights, (inputs,))
        consistent_loss = F.kl_div(F.log_softmax(fast_out, dim=1), p_tch, reduction="batchmean") * alpha / num_fast
        consistent_loss.backward()
    optimizer.step()
    with torch.no_grad():  # the mean teacher follows the student
        for t, s in zip(tch_net.parameters(), net.parameters()):
            t.mul_(0.999).add_(s, alpha=0.001)
