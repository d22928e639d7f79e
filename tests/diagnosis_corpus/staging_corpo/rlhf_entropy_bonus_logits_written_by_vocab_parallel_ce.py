"""RLHF with PPO on a small causal LM, Megatron-style (verl's megatron actor): per-token log-probs
of the response come from Megatron-core's vocab-parallel cross-entropy, and an entropy bonus from
verl's vocab-parallel entropy, both custom autograd Functions applied to the same logits.

Rewritten from verl-project/verl#2484 ("[megatron] fix: resolve backward propagation error in
megatron_actor due to shared logits tensor in-place modification"): with entropy regularization
on, "the entropy calculation `entropy = vocab_parallel_entropy(logits)` fails during backward
propagation because `log_probs = vocab_parallel_log_probs_from_logits(logits, label)` performs
in-place modifications on the logits tensor ... Fix: Decouples tensor dependencies by cloning
logits before entropy calculation". (verl#1672 had already moved the entropy before the log-probs
because "vocab_parallel_log_probs_from_logits is an inplace operator that would modify the logits
in place to save memory".) The entropy Function saves the logits for its backward; Megatron's
cross-entropy then subtracts the max, exponentiates and normalizes them in place (`.float()` is a
no-op on float32 logits, so it works on the caller's tensor). The writer is inside the library call.
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


class _VocabParallelEntropy(torch.autograd.Function):      # verl/utils/megatron/tensor_parallel.py, one rank
    @staticmethod
    def forward(ctx, logits):
        logits_max = logits.max(dim=-1, keepdim=True).values
        normalized = logits - logits_max
        exp_logits = normalized.exp()
        sum_exp = exp_logits.sum(dim=-1, keepdim=True)
        softmax = exp_logits / sum_exp
        sum_softmax_times_logits = (softmax * logits).sum(dim=-1, keepdim=True)
        entropy = logits_max + sum_exp.log() - sum_softmax_times_logits
        ctx.save_for_backward(logits, softmax, sum_softmax_times_logits)
        return entropy.squeeze(-1)

    @staticmethod
    def backward(ctx, grad_output):
        logits, softmax, sum_softmax_times_logits = ctx.saved_tensors
        return -softmax * (logits - sum_softmax_times_logits) * grad_output.unsqueeze(-1)


class _VocabParallelCrossEntropy(torch.autograd.Function):  # megatron/core/tensor_parallel/cross_entropy.py, one rank
    @staticmethod
    def forward(ctx, vocab_parallel_logits, target):
        vocab_parallel_logits = vocab_parallel_logits.float()          # a no-op on float32 logits
        logits_max = vocab_parallel_logits.max(dim=-1)[0]
        vocab_parallel_logits -= logits_max.unsqueeze(dim=-1)          # "In-place subtraction reduces memory pressure."
        predicted_logits = vocab_parallel_logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        exp_logits = vocab_parallel_logits
        torch.exp(vocab_parallel_logits, out=exp_logits)
        sum_exp_logits = exp_logits.sum(dim=-1)
        loss = torch.log(sum_exp_logits) - predicted_logits
        exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target = ctx.saved_tensors
        grad_input = softmax.clone()
        grad_input.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(grad_output).unsqueeze(-1))
        return grad_input * grad_output.unsqueeze(-1), None


def vocab_parallel_log_probs_from_logits(logits, labels):
    return -_VocabParallelCrossEntropy.apply(logits, labels)


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.embed, self.block, self.lm_head = nn.Embedding(vocab, dim), nn.Linear(dim, dim), nn.Linear(dim, vocab)

    def forward(self, input_ids):
        return self.lm_head(torch.tanh(self.block(self.embed(input_ids))))


torch.manual_seed(0)
actor = TinyCausalLM()
optimizer = torch.optim.Adam(actor.parameters(), lr=1e-4)
entropy_coeff, clip_ratio = 0.01, 0.2
for ppo_epoch in range(2):
    input_ids = torch.randint(0, 32, (4, 9))
    responses = input_ids[:, 1:]
    old_log_probs, advantages = -3.5 + 0.1 * torch.randn(4, 8), torch.randn(4, 8)   # from the rollout
    logits = actor(input_ids[:, :-1])
    entropy = _VocabParallelEntropy.apply(logits)  # BUG
    # FIX: entropy = _VocabParallelEntropy.apply(logits.clone())
    log_probs = vocab_parallel_log_probs_from_logits(logits, responses)
    ratio = torch.exp(log_probs - old_log_probs)
    pg_loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_ratio, 1 + clip_ratio)).mean()
    loss = pg_loss - entropy_coeff * entropy.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
