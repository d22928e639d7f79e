"""A VQ tokenizer for padded sequences, its learnable codebook also updated by EMA (vector-quantize-
pytorch's EuclideanCodebook, `learnable_codebook=True`, `ema_update=True`). Rewritten from
lucidrains/vector-quantize-pytorch#247 ("Avoid in-place codebook mask update"), merged: "Replace
the in-place `embed_onehot[~mask] = 0.` update with an out-of-place `masked_fill`. Keep the same
masked one-hot values before `cluster_size` and `embed_sum` are computed. Why: The in-place update
can trip autograd version checks ... with the VQ bridge / learnable codebook path where the one-hot
tensor can still be needed for backward." Met under torch.compile; in eager mode too, the einsum
saves the one-hot for the codebook's gradient. The write is the library's, on its own local.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "lucidrains/vector-quantize-pytorch#247"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the EMA step zeroes padded rows of the one-hot the quantizing einsum saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The reconstruction loss trains the encoder and the decoder straight through the quantizer, "
          "and the codebook loss trains the learnable codebook; the EMA statistics count unpadded tokens only.")
GRADS = ["encoder.parameters()", "decoder.parameters()", "vq.embed"]


class EuclideanCodebook(nn.Module):
    def __init__(self, dim=8, codebook_size=16, decay=0.8, eps=1e-5):
        super().__init__()
        self.decay, self.eps = decay, eps
        self.embed = nn.Parameter(torch.randn(1, codebook_size, dim))
        self.register_buffer("cluster_size", torch.ones(1, codebook_size))
        self.register_buffer("embed_avg", self.embed.detach().clone())

    def forward(self, x, mask):
        flatten = x.reshape(1, -1, x.shape[-1])
        embed_onehot = F.one_hot(torch.cdist(flatten, self.embed).argmin(-1), self.embed.shape[1]).float()
        quantize = torch.einsum("h n c, h c d -> h n d", embed_onehot, self.embed)
        if self.training:
            embed_onehot[~mask] = 0.0  # BUG
            # FIX: embed_onehot = embed_onehot.masked_fill(~mask[..., None], 0.0)
            self.cluster_size.data.lerp_(embed_onehot.sum(dim=1), 1 - self.decay)
            self.embed_avg.data.lerp_(torch.einsum("h n d, h n c -> h c d", flatten, embed_onehot), 1 - self.decay)
            n = self.cluster_size.sum(-1, keepdim=True)
            cluster_size = (self.cluster_size + self.eps) / (n + self.embed.shape[1] * self.eps) * n
            self.embed.data.copy_(self.embed_avg / cluster_size[..., None])
        return quantize.reshape(x.shape)


torch.manual_seed(0)
encoder, decoder, vq = nn.Linear(6, 8), nn.Linear(8, 6), EuclideanCodebook()
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters(), *vq.parameters()], lr=1e-3)
for step in range(2):
    x, m = torch.randn(3, 5, 6), (torch.arange(5)[None] < torch.tensor([[5], [3], [4]]))[..., None]
    z = encoder(x)
    zq = vq(z, m.reshape(1, -1))
    recon = decoder(z + (zq - z).detach())
    loss = F.mse_loss(recon * m, x * m) + F.mse_loss(zq * m, z.detach() * m) + 0.25 * F.mse_loss(z * m, zq.detach() * m)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
