"""An embedding-space diffusion language model (simple-diffusion-lm, a small CDCD): token ids are
embedded, noised and denoised; the estimate is scored against the clean embeddings and, through the
output head, against the ids, the positions outside the diffusion mask labelled -100. Rewritten from
thorinf/simple-diffusion-lm#2 ("Runtime error"): "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.LongTensor [512, 50]] is at
version 1". The maintainer: "Have any modifications to the code been made?" The reporter: "I changed
the code "input_ids.masked_fill" to "input_ids.masked_fill_". I found this operation caused the above
Runtime error." The repository's `w = w.masked_fill(...)` is the fix: the embedding saved the ids.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "thorinf/simple-diffusion-lm#2"
CATEGORY = "inplace"
CULPRIT = "ids"
CAUSE = "the labels are made by filling the embedded token ids in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The diffusion loss and the reconstruction cross-entropy train the embedding, the denoiser "
          "and the output head; the token ids are data and the positions outside the diffusion mask are ignored.")
GRADS = "model.parameters()"


class DiffusionLM(nn.Module):
    def __init__(self, num_embeddings=30, embedding_dim=8, embedding_grad_scale=0.1):
        super().__init__()
        self.embedding_dim, self.embedding_grad_scale = embedding_dim, embedding_grad_scale
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)
        self.denoiser = nn.Sequential(nn.Linear(embedding_dim + 1, 32), nn.GELU(), nn.Linear(32, embedding_dim))
        self.lm_head = nn.Linear(embedding_dim, num_embeddings)
    def compute_loss(self, w, lengths):
        x = F.normalize(self.embedding(w), dim=-1) * math.sqrt(self.embedding_dim)
        x = self.embedding_grad_scale * x + (1.0 - self.embedding_grad_scale) * x.detach()
        len_mask = torch.arange(w.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        cond_mask = torch.rand(w.shape) < 0.1
        diff_mask = len_mask & torch.logical_not(cond_mask)
        t = torch.rand(w.shape[0], 1, 1)
        x_t = torch.where(cond_mask[..., None], x, (1 - t).sqrt() * x + t.sqrt() * torch.randn_like(x))
        x_0_estimation = self.denoiser(torch.cat([x_t, t.expand(-1, w.shape[1], 1)], -1))
        loss_diff = ((x_0_estimation - x) ** 2).mean(-1)[diff_mask].mean()
        logits = self.lm_head(x_0_estimation)
        w.masked_fill_(torch.logical_not(diff_mask), -100)  # BUG
        # FIX: w = w.masked_fill(torch.logical_not(diff_mask), -100)
        loss_reconstruction = F.cross_entropy(logits.transpose(2, 1), w, reduction="none").sum() / diff_mask.sum()
        return loss_diff + loss_reconstruction


torch.manual_seed(0)
model = DiffusionLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    ids, lengths = torch.randint(0, 30, (4, 7)), torch.tensor([7, 5, 6, 7])
    loss = model.compute_loss(ids, lengths)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
