"""SAM (Style-based Age Manipulation): an encoder-generator turns a face plus a target-age channel
into the aged face; a cycle pass then feeds the aged face back with the original age and asks for
the input face again. Each pass has its own backward, and one optimizer step follows both.

Rewritten from yuval-alaluf/SAM#42 ("[code] About the coach.py"): asked whether the two
`loss.backward()` calls in coach.py need `retain_graph=True`, the maintainer answers "It is ok that the
graph will be cleared after the first forward pass. You perform the forward pass, perform backprop,
and then clear the graph. And then you repeat the same thing for the cycle pass." That holds because
coach.py starts the cycle from `y_hat_clone = y_hat.clone().detach().requires_grad_(True)`; cloned
without the detach, the cycle loss backwards into the first pass's freed graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "yuval-alaluf/SAM#42"
CATEGORY = "two-backwards"
CULPRIT = "y_hat_clone"
CAUSE = "the cycle pass starts from the first pass's output with its freed graph"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("The aging loss trains the network through the first pass, and the cycle loss trains it through "
          "the cycle pass only, taking the aged face as a fixed input.")
GRADS = "net.parameters()"


def with_age(images, ages):
    return torch.cat([images, ages[:, None, None, None].expand(-1, 1, *images.shape[2:])], dim=1)


torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())
age_head = nn.Linear(3, 1).requires_grad_(False)            # a frozen age estimator
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
for step in range(2):
    x, input_ages, target_ages = torch.rand(2, 3, 8, 8), torch.rand(2), torch.rand(2)
    optimizer.zero_grad()
    y_hat = net(with_age(x, target_ages))
    loss = F.mse_loss(age_head(y_hat.mean(dim=(2, 3))).squeeze(1), target_ages) + 0.1 * F.mse_loss(y_hat, x)
    loss.backward()
    y_hat_clone = y_hat.clone()  # BUG
    # FIX: y_hat_clone = y_hat.clone().detach().requires_grad_(True)
    y_recovered = net(with_age(y_hat_clone, input_ages))
    loss = F.mse_loss(y_recovered, x)
    loss.backward()
    optimizer.step()
