"""TRPO step (as in MAML-RL's meta-update): conjugate gradient solves F x = g, where each product
F v is a Hessian-vector product of the KL between the old and the new policy.

Rewritten from tristandeleu/pytorch-maml-rl#13 ("Faster hessian_vector_product"): the PR computes
the KL's gradient (create_graph=True) once, outside `_product`, instead of at every call. Asked why
the inner autograd.grad then needs retain_graph=True, the author answered: "Calling
`torch.autograd.grad` without `retain_graph=True` will free the "buffers"", so the second product of
conjugate gradient fails; the repository's hessian_vector_product now keeps it (retain_graph=True).
"""
import torch
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

SOURCE = "tristandeleu/pytorch-maml-rl#13"
CATEGORY = "higher-order"
CULPRIT = "flat_grad_kl"
CAUSE = "the first Hessian-vector product frees the KL gradient's graph the next needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The surrogate loss trains the policy; the natural-gradient step comes from the KL's "
          "curvature, which must keep its graph for every product and is not trained itself.")
GRADS = "policy.parameters()"

def conjugate_gradient(f_Ax, b, iters=3):
    x, r, p = torch.zeros_like(b), b.clone(), b.clone()
    rr = r @ r
    for _ in range(iters):
        z = f_Ax(p)
        a = rr / (p @ z)
        x, r = x + a * p, r - a * z
        rr, rr_old = r @ r, rr
        p = r + rr / rr_old * p
    return x

def fvp(vector, damping=1e-2):
    grad2s = torch.autograd.grad(flat_grad_kl @ vector, list(policy.parameters()))  # BUG
    # FIX: grad2s = torch.autograd.grad(flat_grad_kl @ vector, list(policy.parameters()), retain_graph=True)
    return parameters_to_vector(grad2s) + damping * vector

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
log_std = torch.zeros(2)
for it in range(2):
    obs, actions, advantages = torch.randn(32, 4), torch.randn(32, 2), torch.randn(32)
    old_mu = policy(obs).detach()
    mu = policy(obs)
    ratio = torch.exp(torch.distributions.Normal(mu, log_std.exp()).log_prob(actions).sum(-1)
                      - torch.distributions.Normal(old_mu, log_std.exp()).log_prob(actions).sum(-1))
    loss = -(ratio * advantages).mean()
    policy.zero_grad()
    loss.backward()
    g = parameters_to_vector(p.grad for p in policy.parameters())
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(old_mu, log_std.exp()),
                                           torch.distributions.Normal(policy(obs), log_std.exp())).sum(-1).mean()
    flat_grad_kl = parameters_to_vector(torch.autograd.grad(kl, list(policy.parameters()), create_graph=True))
    step = conjugate_gradient(fvp, -g)
    with torch.no_grad():
        vector_to_parameters(parameters_to_vector(policy.parameters()) + 0.1 * step, policy.parameters())
