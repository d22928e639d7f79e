"""A Wasserstein auto-encoder (WAE-MMD): the encoder's codes are pulled towards the Gaussian prior by a
maximum mean discrepancy with an RBF kernel at several scales, next to the reconstruction loss.
Rewritten from schelotto/Wasserstein-AutoEncoders#6 ("backward MMD"): "about the RBF kernel, pytorch
was throwing me an error because of in place modification before backward. maybe worth changing
`res1 += torch.exp(-C * dists_y)` by `res1 = res1+torch.exp(-C * dists_y)`"; a contributor answered
"I solved this issue in #10", which the maintainer merged ("I confess that for a long time I should
have the bug in mmd fixed"). `torch.exp` saves its output for its backward, and `+=` writes into it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "schelotto/Wasserstein-AutoEncoders#6"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "+= writes into the output of torch.exp, which exp's backward needs"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The reconstruction loss trains the encoder and the decoder, and the MMD penalty trains the "
          "encoder only, towards the prior.")
GRADS = ["encoder.parameters()", "decoder.parameters()"]


def rbf_kernel(X, Y, h_dim):
    batch_size = X.size(0)
    norms_x = X.pow(2).sum(1, keepdim=True)
    dists_x = norms_x + norms_x.t() - 2 * torch.mm(X, X.t())
    norms_y = Y.pow(2).sum(1, keepdim=True)
    dists_y = norms_y + norms_y.t() - 2 * torch.mm(Y, Y.t())
    dists_c = norms_x + norms_y.t() - 2 * torch.mm(X, Y.t())
    stats = 0
    for scale in [.1, .2, .5, 1., 2., 5., 10.]:
        C = 2 * h_dim * 1.0 / scale
        res1 = torch.exp(-C * dists_x)
        res1 += torch.exp(-C * dists_y)  # BUG
        # FIX: res1 = res1 + torch.exp(-C * dists_y)
        res1 = (1 - torch.eye(batch_size)) * res1
        res1 = res1.sum() / (batch_size - 1)
        res2 = torch.exp(-C * dists_c)
        res2 = res2.sum() * 2. / batch_size
        stats += res1 - res2
    return stats


torch.manual_seed(123)
n_z, sigma = 4, 1.0
encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, n_z))
decoder = nn.Sequential(nn.Linear(n_z, 32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid())
enc_optim = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_optim = torch.optim.Adam(decoder.parameters(), lr=1e-3)
for step in range(2):
    images = torch.rand(8, 16)
    enc_optim.zero_grad(), dec_optim.zero_grad()
    recon_loss = F.mse_loss(decoder(encoder(images)), images)
    z_fake = torch.randn(images.size(0), n_z) * sigma
    mmd_loss = rbf_kernel(encoder(images), z_fake, h_dim=n_z) / images.size(0)
    total_loss = recon_loss + mmd_loss
    total_loss.backward()
    enc_optim.step(), dec_optim.step()
