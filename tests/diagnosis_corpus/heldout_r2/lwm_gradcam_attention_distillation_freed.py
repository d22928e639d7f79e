"""Learning without Memorizing (LwM), class-incremental learning in FACIL: while learning a new task, an
attention-distillation loss asks the current model's Grad-CAM map to match the old model's map, next to
the classification loss. Rewritten from mmasana/FACIL#37 ("LwM - no gradient in attention distillation
loss", following #9): FACIL's GradCAM backwards the class score inside its `__call__`, detaches the
hooked activations and builds the map under `torch.no_grad()`, so the attention loss trained nothing.
The fix given in the thread keeps the current model's activations attached (`self.activations = output`
when `retain_graph`), makes the `no_grad` conditional, and builds the current model's extractor with
`GradCAM(self.model, self.gradcam_layer, retain_graph=True)`. Here the user has made the map
differentiable but builds the extractor without `retain_graph=True`: the score's backward inside it
frees the forward pass the attention loss must backward through (detaching brings "no gradient" back).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "mmasana/FACIL#37"
CATEGORY = "two-backwards"
CULPRIT = "attmap"
CAUSE = "Grad-CAM's score backward frees the forward the attention loss needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The classification loss and the attention-distillation loss both train the current model, the "
          "latter through its Grad-CAM activations with the Grad-CAM weights as constants; the old model is not trained.")
GRADS = "model.parameters()"

class GradCAM:
    def __init__(self, model, layer, retain_graph=False):
        self.model, self.retain_graph = model, retain_graph
        layer.register_forward_hook(lambda m, i, o: setattr(self, "activations", o))   # no .detach(): the map must train
        layer.register_full_backward_hook(lambda m, gi, go: setattr(self, "gradients", go[0].detach()))

    def __call__(self, images):
        logits = self.model(images)
        score = logits.gather(1, logits.argmax(1, keepdim=True))
        self.model.zero_grad()
        score.mean().backward(retain_graph=self.retain_graph)
        weights = self.gradients.mean(dim=(2, 3), keepdim=True)
        return F.relu((weights * self.activations).sum(dim=1, keepdim=True))

def make_net():
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 6, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 4))

torch.manual_seed(0)
old_model, model = make_net(), make_net()
model.load_state_dict(old_model.state_dict())
gradcam_old = GradCAM(old_model, old_model[2])
gradcam = GradCAM(model, model[2])  # BUG
# FIX: gradcam = GradCAM(model, model[2], retain_graph=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for batch in range(2):
    images, targets = torch.randn(4, 3, 6, 6), torch.randint(0, 4, (4,))
    attmap_old = gradcam_old(images).detach()
    attmap = gradcam(images)
    outputs = model(images)
    loss = F.cross_entropy(outputs, targets) + 0.5 * F.l1_loss(F.normalize(attmap.flatten(1)), F.normalize(attmap_old.flatten(1)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
