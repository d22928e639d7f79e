"""Fine-tuning a Chinese CLIP (image tower, text tower, learned temperature) with the symmetric
image-text contrastive loss, following a library's fine-tuning tutorial.

Rewritten from modelscope/modelscope#481 ("Inplace error of Chinese CLIP"): fine-tuning as the
tutorial shows raised "one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.HalfTensor [1, 512]], which is output 0 of DivBackward0". The
reporter closed it with the fix: "replacing the '/=' operation with normal division operation in
line 581 & 593 in modelscope/models/multi_modal/clip/model.py". The library's forward normalized
both towers' features with `/=`, writing over the features that `norm` had saved; the user's loop
is not where the write happens.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "modelscope/modelscope#481"
CATEGORY = "inplace"
CULPRIT = ["image_features", "text_features"]
CAUSE = "the library normalizes both towers' features in place after norm saved them"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The contrastive loss trains the image tower, the text tower and the temperature "
          "together, through the normalized features of both towers.")
GRADS = "model.parameters()"


class CLIPForMultiModalEmbedding(nn.Module):   # the library's model, reduced
    def __init__(self, dim=8):
        super().__init__()
        self.visual = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, dim))
        self.bert = nn.EmbeddingBag(30, dim)
        self.logit_scale = nn.Parameter(torch.tensor(2.659))

    def forward(self, image, text):
        image_features = self.visual(image)
        image_features /= image_features.norm(dim=-1, keepdim=True)  # BUG
        # FIX: image_features = image_features / image_features.norm(dim=-1, keepdim=True)
        text_features = self.bert(text)
        text_features /= text_features.norm(dim=-1, keepdim=True)  # BUG
        # FIX: text_features = text_features / text_features.norm(dim=-1, keepdim=True)
        return image_features, text_features, self.logit_scale.exp()


torch.manual_seed(0)
model = CLIPForMultiModalEmbedding()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    images, texts = torch.randn(4, 12), torch.randint(0, 30, (4, 6))
    image_features, text_features, logit_scale = model(images, texts)
    logits_per_image = logit_scale * image_features @ text_features.t()
    labels = torch.arange(4)
    loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_image.t(), labels)) / 2
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
