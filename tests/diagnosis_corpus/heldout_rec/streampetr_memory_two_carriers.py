"""A streaming 3D detector keeps a memory queue of its top-k query embeddings and their reference
points from frame to frame, as attributes of its head.

Rewritten from exiawsh/StreamPETR#63 ("Confusing about the num_nograd_frames"): asked why
`post_update_memory` calls `.detach()` on the kept memory and reference points, the maintainer
answered: "The memory tensor needs to be detached when using stream training, because of the
RuntimeError: Trying to backward through the graph a second time". Two attributes carry the last
frame's graph at once; the repository detaches both (`rec_memory`, `rec_reference_points`).
"""
import torch
import torch.nn as nn

SOURCE = "exiawsh/StreamPETR#63"
CATEGORY = "carried-state"
CULPRIT = ["head.memory_embedding", "head.memory_reference_point"]
CAUSE = "memory embedding and reference points kept from the last frame carry its graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each frame's detection loss trains the head through this frame's computation only; the "
          "memory from earlier frames is an input, not something to train through.")
GRADS = "head.parameters()"


class StreamHead(nn.Module):
    def __init__(self, d=16, topk=4):
        super().__init__()
        self.query, self.ref = nn.Linear(d, d), nn.Linear(d, 3)
        self.score, self.topk = nn.Linear(d, 1), topk
        self.memory_embedding = torch.zeros(1, topk, d)
        self.memory_reference_point = torch.zeros(1, topk, 3)

    def forward(self, feats):
        q = torch.tanh(self.query(feats)) + self.memory_embedding.mean(1, keepdim=True)
        ref = torch.sigmoid(self.ref(q)) + 0.1 * self.memory_reference_point.mean(1, keepdim=True)
        score = self.score(q).squeeze(-1)
        topk = score.topk(self.topk, dim=1).indices
        self.memory_embedding = q.gather(1, topk[..., None].expand(-1, -1, q.shape[-1]))  # BUG
        # FIX: self.memory_embedding = q.gather(1, topk[..., None].expand(-1, -1, q.shape[-1])).detach()
        self.memory_reference_point = ref.gather(1, topk[..., None].expand(-1, -1, 3))  # BUG
        # FIX: self.memory_reference_point = ref.gather(1, topk[..., None].expand(-1, -1, 3)).detach()
        return ref * torch.sigmoid(score)[..., None]


torch.manual_seed(0)
head = StreamHead()
opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
for frame in range(3):
    feats, targets = torch.randn(1, 10, 16), torch.rand(1, 10, 3)
    loss = nn.functional.l1_loss(head(feats), targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
