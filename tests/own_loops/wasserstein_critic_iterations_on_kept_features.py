"""Domain adaptation with a Wasserstein critic (WDGRL-style): the feature extractor's features of a
source and a target batch are computed once; the critic is trained on them for a few iterations
(its loss: the Wasserstein estimate and a gradient penalty on features interpolated between the
domains); then the extractor and the classifier learn the task and to shrink the distance.
Training crashes at the critic's second iteration."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("The critic loss (with its gradient penalty) trains only the critic, on fixed features; the "
          "classification loss and the Wasserstein distance train the extractor and the classifier.")
GRADS = ["extractor.parameters()", "classifier.parameters()", "critic.parameters()"]
RULE = "computed-once"
KIND = "detach-input"

torch.manual_seed(0)
extractor = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 8))
classifier, critic = nn.Linear(8, 3), nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam([*extractor.parameters(), *classifier.parameters()], lr=1e-3)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-3)
for _batch in range(2):
    xs, ys, xt = torch.randn(16, 12), torch.randint(0, 3, (16,)), torch.randn(16, 12) + 0.5
    h_s, h_t = extractor(xs), extractor(xt)
    for _ in range(3):
        eps = torch.rand(16, 1)
        mixed = (eps * h_s.detach() + (1 - eps) * h_t).requires_grad_()  # BUG
        # FIX: mixed = (eps * h_s.detach() + (1 - eps) * h_t.detach()).requires_grad_()
        slopes = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
        penalty = ((slopes.norm(dim=1) - 1) ** 2).mean()
        critic_loss = critic(h_t.detach()).mean() - critic(h_s.detach()).mean() + 10 * penalty
        opt_critic.zero_grad()
        critic_loss.backward()
        opt_critic.step()
    distance = critic(h_s).mean() - critic(h_t).mean()
    loss = F.cross_entropy(classifier(h_s), ys) + 0.1 * distance
    opt.zero_grad()
    loss.backward()
    opt.step()
