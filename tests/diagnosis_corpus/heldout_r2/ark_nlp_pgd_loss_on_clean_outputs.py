"""PGD adversarial training of a text classifier with ark-nlp's task API (K attack steps on the
word embeddings, each backwarding an adversarial loss, then one optimizer step). Rewritten from
xiangking/ark-nlp#46 ("添加PGD对抗训练报错": adding PGD training raises "Trying to backward through
the graph a second time"): the poster's loop ran `logits = self.module(**inputs)`, then built the
loss from `outputs`, the clean forward whose graph `loss.backward()` had freed. In #50
retain_graph=True trains but scores below FGM (the loss never sees the perturbation); ark-nlp's own
tasks use the new forward: `_, attck_loss = self._get_train_loss(inputs, logits, **kwargs)`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "xiangking/ark-nlp#46"
CATEGORY = "computed-once"
CULPRIT = "outputs"
CAUSE = "the adversarial loss reuses the clean forward's outputs, freed by loss.backward()"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("Each adversarial loss trains the classifier through its forward pass on the perturbed "
          "embeddings, adding to the clean loss's gradients in one optimizer step.")
GRADS = "module.parameters()"

class PGD:
    def __init__(self, module, emb_name="word_embeddings", epsilon=1.0, alpha=0.3):
        self.module, self.emb, self.epsilon, self.alpha = module, module[emb_name].weight, epsilon, alpha
    def attack(self, is_first_attack=False):
        if is_first_attack:
            self.emb_backup = self.emb.data.clone()
        self.emb.data.add_(self.alpha * self.emb.grad / torch.norm(self.emb.grad))
        self.emb.data = self.emb_backup + (self.emb.data - self.emb_backup).clamp(-self.epsilon, self.epsilon)
    def restore(self): self.emb.data = self.emb_backup
    def backup_grad(self): self.grad_backup = [p.grad.clone() for p in self.module.parameters()]
    def restore_grad(self): [setattr(p, "grad", g) for p, g in zip(self.module.parameters(), self.grad_backup)]

def forward(input_ids): return module["classifier"](torch.tanh(module["word_embeddings"](input_ids)).mean(1))
def get_train_loss(inputs, logits): return logits, F.cross_entropy(logits, inputs["label_ids"])

torch.manual_seed(0)
module = nn.ModuleDict({"word_embeddings": nn.Embedding(50, 16), "classifier": nn.Linear(16, 3)})
optimizer, pgd, K = torch.optim.AdamW(module.parameters(), lr=2e-5), PGD(module), 3
for step in range(2):
    inputs = {"input_ids": torch.randint(0, 50, (8, 6)), "label_ids": torch.randint(0, 3, (8,))}
    optimizer.zero_grad()
    outputs = forward(inputs["input_ids"])
    logits, loss = get_train_loss(inputs, outputs)
    loss.backward()
    pgd.backup_grad()
    for t in range(K):
        pgd.attack(is_first_attack=(t == 0))
        if t != K - 1:
            module.zero_grad()
        else:
            pgd.restore_grad()
        logits = forward(inputs["input_ids"])
        logits, loss_adv = get_train_loss(inputs, outputs)  # BUG
        # FIX: logits, loss_adv = get_train_loss(inputs, logits)
        loss_adv.backward()
    pgd.restore()
    optimizer.step()
