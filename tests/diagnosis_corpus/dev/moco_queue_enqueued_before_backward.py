"""MoCo (momentum contrast): a query encoder trained by InfoNCE against this batch's keys from a
momentum key encoder and a queue of earlier keys, which `forward` then enqueues in place.
Rewritten from facebookresearch/moco#21 ("Question about cloning the queue"), asking whether
`l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])` needs the clone. The
maintainer (ppwwyyxx): "`self.queue` is in-place modified in self._dequeue_and_enqueue, so a
clone is necessary. If not cloned, you should see an error raised by pytorch." The einsum saved
the queue for q's gradient, and the enqueue in the same forward writes into it before backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "facebookresearch/moco#21"
CATEGORY = "inplace"
CULPRIT = "model.queue"
CAUSE = "the enqueue overwrites the queue the negative logits saved"
FIX_KIND = "no-data-write"
ERROR = "inplace"
INTENT = ("The contrastive loss trains only the query encoder, against this batch's keys and the "
          "queued keys as constants; the key encoder follows by momentum and is not trained.")
GRADS = "model.encoder_q.parameters()"

class MoCo(nn.Module):
    def __init__(self, dim=8, K=24, m=0.99, T=0.07):
        super().__init__()
        self.K, self.m, self.T, self.queue_ptr = K, m, T, 0
        self.encoder_q = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, dim))
        self.encoder_k = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, dim)).requires_grad_(False)
        self.encoder_k.load_state_dict(self.encoder_q.state_dict())
        self.register_buffer("queue", F.normalize(torch.randn(dim, K), dim=0))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        self.queue[:, self.queue_ptr:self.queue_ptr + keys.shape[0]] = keys.T
        self.queue_ptr = (self.queue_ptr + keys.shape[0]) % self.K

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)
            k = F.normalize(self.encoder_k(im_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.detach()])  # BUG
        # FIX: l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        self._dequeue_and_enqueue(k)
        return logits, torch.zeros(logits.shape[0], dtype=torch.long)

torch.manual_seed(0)
model = MoCo()
optimizer = torch.optim.SGD(model.encoder_q.parameters(), lr=0.03, momentum=0.9)
for i in range(2):
    images = torch.randn(8, 10)
    output, target = model(images + 0.1 * torch.randn(8, 10), images + 0.1 * torch.randn(8, 10))
    loss = F.cross_entropy(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
