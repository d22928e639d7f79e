"""A ViT-VQGAN-style tokenizer with two ViT decoders reading the same quantized tokens (two
reconstruction targets), the codebook trained by the codebook loss and the encoder by the
commitment loss and, through the straight-through estimator, by both reconstructions.

Rewritten from thuanz123/enhancing-transformers#11 ("An inplace operation in the forward process"):
"I found an inplace operation in the forward process of ViTDecoder" (`token += self.de_pos_embedding`)
"which may cause the error: RuntimeError: one of the variables needed for gradient computation has
been modified by an inplace operation ... rec_a = decoder_a(quant); rec_b = decoder_b(quant) # Above
error will occur when backwarding, as the quant is modified by the above inplace operation here.
Maybe it would be better to change it to: `token = token + self.de_pos_embedding`". The maintainer
fixed it ("It should be good now"). The write is inside the library's decoder, not the user's code.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "thuanz123/enhancing-transformers#11"
CATEGORY = "inplace"
CULPRIT = "quant"
CAUSE = "each decoder adds its position embedding into the shared quantized tokens in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("Both reconstruction losses train the encoder (straight through the quantizer) and their "
          "own decoder, the codebook loss trains the codebook and the commitment loss the encoder.")
GRADS = ["encoder.parameters()", "codebook.weight", "decoder_a.parameters()", "decoder_b.parameters()"]


class ViTDecoder(nn.Module):
    def __init__(self, n_tokens=4, dim=8, patch=12):
        super().__init__()
        self.de_pos_embedding = nn.Parameter(0.02 * torch.randn(1, n_tokens, dim))
        self.transformer = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
        self.to_pixel = nn.Linear(dim, patch)

    def forward(self, token):
        x = token
        x += self.de_pos_embedding  # BUG
        # FIX: x = x + self.de_pos_embedding
        return self.to_pixel(self.transformer(x))


torch.manual_seed(0)
encoder, codebook = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 8)), nn.Embedding(32, 8)
decoder_a, decoder_b = ViTDecoder(), ViTDecoder()
params = [*encoder.parameters(), *codebook.parameters(), *decoder_a.parameters(), *decoder_b.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
for step in range(2):
    patches_a, patches_b = torch.randn(6, 4, 12), torch.randn(6, 4, 12)
    z = encoder(patches_a)
    zq = codebook(torch.cdist(z, codebook.weight.expand(6, -1, -1)).argmin(-1))
    quant = z + (zq - z).detach()
    rec_a, rec_b = decoder_a(quant), decoder_b(quant)
    loss = (F.mse_loss(rec_a, patches_a) + F.mse_loss(rec_b, patches_b)
            + F.mse_loss(zq, z.detach()) + 0.25 * F.mse_loss(z, zq.detach()))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
