"""A streaming object detector for event-camera and frame sequences (SODFormer): each batch's
encoder memory attends to the memories of the previous frames, kept in a deque of reference
frames on the module (maxlen = number of reference frames), and is then appended to it.

Rewritten from dianzl/SODFormer#1 ("Training Issue": "Trying to backward through the graph a
second time"; with `losses.backward(retain_graph=True)` the user got "modified by an inplace
operation" instead). The maintainer: "The reason for this problem is that the gradient of the
previous frames is used multiple times during the temporal information extraction process. We
have modified the codes of this part": the fix appends `memory.detach()` to `self.src_all`
instead of `memory` (commits "Update ST_detr.py", "Update fusion.py").
"""
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "dianzl/SODFormer#1"
CATEGORY = "carried-state"
CULPRIT = "detector.src_all"
CAUSE = "the reference-frame deque keeps earlier batches' encoder memories with their freed graphs"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The detection loss of each batch trains the frame encoder through this batch's memory, "
          "the temporal attention and the heads; memories of earlier frames are constant references.")
GRADS = ["detector.parameters()"]


class TemporalDetector(nn.Module):
    def __init__(self, dim=16, num_ref_frames=2, num_queries=4, num_classes=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(2, dim, 3, 2, 1), nn.ReLU(), nn.Conv2d(dim, dim, 3, 2, 1))
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.query_embed = nn.Embedding(num_queries, dim)
        self.class_embed, self.bbox_embed = nn.Linear(dim, num_classes), nn.Linear(dim, 4)
        self.src_all = deque(maxlen=num_ref_frames)

    def forward(self, events):
        memory = self.encoder(events).flatten(2).transpose(1, 2)   # (1, H*W, dim)
        refs = torch.cat([memory, *self.src_all], dim=1)
        queries = self.query_embed.weight[None]
        hs, _ = self.attn(queries, refs, refs)
        self.src_all.append(memory)  # BUG
        # FIX: self.src_all.append(memory.detach())
        return self.class_embed(hs), self.bbox_embed(hs).sigmoid()


torch.manual_seed(0)
detector = TemporalDetector()
optimizer = torch.optim.AdamW(detector.parameters(), lr=1e-4)
for frame in range(3):
    events = torch.randn(1, 2, 16, 16)
    labels, boxes = torch.randint(0, 3, (1, 4)), torch.rand(1, 4, 4)
    logits, pred_boxes = detector(events)
    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten()) + F.l1_loss(pred_boxes, boxes)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
