"""SOLOv2's mask-feature branch: every FPN level goes through its own conv block (conv, norm, ReLU), is upsampled to the
1/4 scale, and the levels are summed into one mask feature map; dynamic kernels turn it into instance masks.
Rewritten from OpenFirework/pytorch_solov2#22 ("请问大家有遇到 inplace operation 错误呀", has anyone met the inplace
operation error): "one of the variables needed for gradient computation has been modified by an inplace operation: ...
which is output 0 of ReluBackward0, is at version 3; expected version 0". The fix in the thread, besides older torch:
change `feature_add_all_level += self.convs_all_levels[i](input_p)` to
`feature_add_all_level = self.convs_all_levels[i](input_p) + feature_add_all_level`. The running sum starts as the first
level's ReLU output, which that ReLU saved for its backward; each `+=` writes into it."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "OpenFirework/pytorch_solov2#22"
CATEGORY = "inplace"
CULPRIT = "feature_add_all_level"
CAUSE = "+= accumulates the other FPN levels into the first level's saved ReLU output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The mask loss trains every level's conv block, the fusing conv and the kernel head, through the sum of all "
          "FPN levels.")
GRADS = ["convs_all_levels.parameters()", "conv_pred.parameters()", "kernel_head.parameters()"]


def conv_block(c_in, c_out, k=3):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=False), nn.GroupNorm(4, c_out), nn.ReLU())


torch.manual_seed(0)
convs_all_levels = nn.ModuleList([conv_block(8, 8) for _ in range(4)])
conv_pred, kernel_head = conv_block(8, 8, k=1), nn.Linear(8, 3 * 8)  # 1x1 kernels for 3 instances
params = [*convs_all_levels.parameters(), *conv_pred.parameters(), *kernel_head.parameters()]
optimizer = torch.optim.SGD(params, lr=0.01)
for it in range(2):
    fpn = [torch.randn(1, 8, 16 // 2 ** k, 16 // 2 ** k) for k in range(4)]  # 1/4 .. 1/32 of a 64x64 image
    gt_masks = (torch.rand(1, 3, 16, 16) > 0.5).float()
    feature_add_all_level = convs_all_levels[0](fpn[0])
    for i in range(1, len(fpn)):
        input_p = F.interpolate(fpn[i], size=fpn[0].shape[-2:], mode="bilinear", align_corners=False)
        feature_add_all_level += convs_all_levels[i](input_p)  # BUG
        # FIX: feature_add_all_level = convs_all_levels[i](input_p) + feature_add_all_level
    mask_feat = conv_pred(feature_add_all_level)
    kernels = kernel_head(fpn[-1].mean((2, 3))).view(3, 8, 1, 1)
    mask_pred = F.conv2d(mask_feat, kernels).sigmoid()
    inter = (mask_pred * gt_masks).sum((2, 3))  # dice loss per instance
    loss = (1 - 2 * inter / (mask_pred.pow(2).sum((2, 3)) + gt_masks.pow(2).sum((2, 3)) + 1e-3)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
