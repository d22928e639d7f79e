"""H3DNet-style 3D object detection on point clouds: the refinement head pools the features of
matched surface and line primitives for each object proposal, passes them through a 1x1 conv with
batch norm and ReLU, adds the proposal's original feature as a residual, and decodes the refined
box scores.

Rewritten from zaiweizhang/H3DNet#29 ("One inplace error"): "`+=` may cause inplace error in many
versions of PyTorch. You may revise it by `net = net + original_feature`" (models/
proposal_module_refine.py, `net = F.relu(self.bn_refine1(self.conv_refine1(combine_feature)))` then
`net += original_feature ### Residual feature`). The maintainer: "fixed. Thanks for the info!". The
ReLU saves its output for backward; the residual is added into that very tensor, inside forward,
so no name of the user's holds it when backward fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "zaiweizhang/H3DNet#29"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the residual is added in place into a saved ReLU output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The box-regression loss trains the whole refinement head and, through the residual, the layer that "
          "makes the proposal features.")
GRADS = ["head.parameters()", "proposal_net.parameters()"]


class RefineHead(nn.Module):
    def __init__(self, c=16, out=8):
        super().__init__()
        self.conv_surface, self.conv_line = nn.Conv1d(c, c, 1), nn.Conv1d(c, c, 1)
        self.conv_refine1, self.bn_refine1 = nn.Conv1d(2 * c, c, 1), nn.BatchNorm1d(c)
        self.conv_refine2, self.bn_refine2 = nn.Conv1d(c, c, 1), nn.BatchNorm1d(c)
        self.conv_refine4 = nn.Conv1d(c, out, 1)

    def forward(self, surface_features, line_features, original_feature):
        B, C, P = original_feature.shape                        # features of 6 surfaces / 12 lines per proposal
        surface = F.relu(self.conv_surface(surface_features)).view(B, C, 6, P)
        line = F.relu(self.conv_line(line_features)).view(B, C, 12, P)
        combine_feature = torch.cat([surface.max(2).values, line.max(2).values], dim=1)
        net = F.relu(self.bn_refine1(self.conv_refine1(combine_feature)))
        net += original_feature  # BUG
        # FIX: net = net + original_feature
        net = F.relu(self.bn_refine2(self.conv_refine2(net)))
        return self.conv_refine4(net)


torch.manual_seed(0)
head, proposal_net = RefineHead(), nn.Conv1d(3, 16, 1)
optimizer = torch.optim.Adam([*head.parameters(), *proposal_net.parameters()], lr=1e-3)
proposal_xyz, targets = torch.randn(2, 3, 10), torch.randn(2, 8, 10)
original_feature = F.relu(proposal_net(proposal_xyz))
pred = head(torch.randn(2, 16, 60), torch.randn(2, 16, 120), original_feature)
loss = F.smooth_l1_loss(pred, targets)
optimizer.zero_grad()
loss.backward()
optimizer.step()
