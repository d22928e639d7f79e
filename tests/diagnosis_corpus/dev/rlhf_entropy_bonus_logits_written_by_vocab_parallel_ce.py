"""RLHF with PPO on a small causal LM in verl's Megatron actor: log-probs from Megatron-core's
vocab-parallel cross-entropy and an entropy bonus from verl's vocab-parallel entropy, both on one logits.

Rewritten from verl-project/verl#2484 ("[megatron] fix: resolve backward propagation error in
megatron_actor due to shared logits tensor in-place modification"): "the entropy calculation
`entropy = vocab_parallel_entropy(logits)` fails during backward propagation because `log_probs =
vocab_parallel_log_probs_from_logits(logits, label)` performs in-place modifications on the logits
tensor ... Fix: Decouples tensor dependencies by cloning logits before entropy calculation". The entropy
saves the logits; the cross-entropy (one tensor-parallel rank here) rewrites them in place.
"""
import torch
import torch.nn as nn

SOURCE = "verl-project/verl#2484"
CATEGORY = "inplace"
CULPRIT = "logits"
CAUSE = "Megatron's cross-entropy rewrites the logits in place after the entropy function saved them"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The PPO clipped policy loss and the entropy bonus both train the actor language model; the "
          "old log-probs and advantages from the rollout are constants.")
GRADS = "actor.parameters()"


def vocab_parallel_entropy(logits):                        # verl: saves the logits for its backward
    return logits.logsumexp(dim=-1) - (logits.softmax(dim=-1) * logits).sum(dim=-1)

class VocabParallelCrossEntropy(torch.autograd.Function):   # megatron/core/tensor_parallel/cross_entropy.py
    @staticmethod
    def forward(ctx, vocab_parallel_logits, target):
        vocab_parallel_logits = vocab_parallel_logits.float()
        vocab_parallel_logits -= vocab_parallel_logits.max(dim=-1)[0].unsqueeze(dim=-1)  # "reduces memory pressure"
        predicted_logits = vocab_parallel_logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        sum_exp_logits = torch.exp(vocab_parallel_logits, out=vocab_parallel_logits).sum(dim=-1)
        exp_logits = vocab_parallel_logits
        exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target)
        return torch.log(sum_exp_logits) - predicted_logits

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target = ctx.saved_tensors                   # the gradient is softmax - one_hot(target)
        return (softmax - nn.functional.one_hot(target, softmax.size(-1))) * grad_output.unsqueeze(-1), None

torch.manual_seed(0)
actor = nn.Sequential(nn.Embedding(32, 16), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 32))   # a tiny causal LM
optimizer = torch.optim.Adam(actor.parameters(), lr=1e-4)
for ppo_epoch in range(2):
    input_ids = torch.randint(0, 32, (4, 9))
    old_log_probs, advantages = -3.5 + 0.1 * torch.randn(4, 8), torch.randn(4, 8)   # from the rollout
    logits = actor(input_ids[:, :-1])
    entropy = vocab_parallel_entropy(logits)  # BUG
    # FIX: entropy = vocab_parallel_entropy(logits.clone())
    log_probs = -VocabParallelCrossEntropy.apply(logits, input_ids[:, 1:])   # vocab_parallel_log_probs_from_logits
    ratio = torch.exp(log_probs - old_log_probs)
    loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(0.8, 1.2)).mean() - 0.01 * entropy.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
