"""SOLOFusion-style temporal 3D detection: each frame's image features are lifted to a bird's-eye
view (BEV) grid, concatenated with the BEV of the previous frames, fused, and fed to the detection
head. The detector keeps the history on itself and trains frame after frame of a sequence (stream
training, one optimizer step per frame).

Rewritten from Divadi/SOLOFusion#22 ("why detach history feat?"), which points at the line that
stores the history, `self.history_bev = feats_cat[:, :-self.single_bev_num_channels, ...].detach()`
(feats_cat: the current BEV concatenated with the history). The maintainer: "This is to prevent
backpropagation through time, which would incurr significant computational costs (and may not even
work after backpropagation is done in the previous training step)". Stored without the detach, the
next frame's loss reaches the previous frame's graph, freed by its backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Divadi/SOLOFusion#22"
CATEGORY = "carried-state"
CULPRIT = "model.history_bev"
CAUSE = "the BEV history stored on the detector keeps earlier frames' graphs"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The detection loss of each frame trains the image-to-BEV layer, the temporal fusion layer and the head "
          "through this frame's BEV; the BEV history of earlier frames is a constant.")
GRADS = "model.parameters()"


class TemporalBEVDetector(nn.Module):
    def __init__(self, c=8, history_cat_num=2):
        super().__init__()
        self.img_to_bev, self.c, self.k = nn.Linear(12, c), c, history_cat_num
        self.history_fuse = nn.Linear(c * (history_cat_num + 1), c)
        self.head = nn.Linear(c, 4)
        self.history_bev = None

    def forward(self, img_feats, start_of_sequence):
        curr_bev = F.relu(self.img_to_bev(img_feats))                 # (cells, c)
        if self.history_bev is None or start_of_sequence:
            self.history_bev = curr_bev.repeat(1, self.k).detach()
        fused = F.relu(self.history_fuse(torch.cat([curr_bev, self.history_bev], dim=1)))
        self.history_bev = torch.cat([curr_bev, self.history_bev], dim=1)[:, :-self.c]  # BUG
        # FIX: self.history_bev = torch.cat([curr_bev, self.history_bev], dim=1)[:, :-self.c].detach()
        return self.head(fused)


torch.manual_seed(0)
model = TemporalBEVDetector()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
for frame in range(3):                                   # one sequence, streamed frame by frame
    img_feats, boxes = torch.randn(20, 12), torch.randn(20, 4)
    loss = F.smooth_l1_loss(model(img_feats, start_of_sequence=frame == 0), boxes)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
