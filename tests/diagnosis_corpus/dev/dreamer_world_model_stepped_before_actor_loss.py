"""Dreamer (model-based RL): one batch gives three losses, the world model's (reconstruction and
reward), the actor's (returns of trajectories imagined by rolling the learned transition forward)
and the value model's. Each has its own Adam optimizer.

Rewritten from juliusfrost/dreamer-pytorch#66 ("Fix with multiple optimizers", merged by the
maintainer after juliusfrost/dreamer-pytorch#52, "main.py does not run on pytorch==1.5.0"): the
loop did zero_grad / backward / step for the model loss, then for the actor loss, then for the value
loss. The maintainer: "the order of updates (zerograd(), backward(), step()) matters when using
multiple optimizers and multiple losses ... As such I changed the update order": every zero_grad and
backward first, then the three steps. The imagined rollout runs through the transition and reward
models, whose weights the model optimizer's step has changed when the actor loss is backwarded."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "juliusfrost/dreamer-pytorch#66"
CATEGORY = "inplace"
CULPRIT = "reward_model.weight"
CAUSE = "the world model's optimizer steps before the actor loss backwards through it"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The model loss trains the encoder, decoder, transition and reward models, and the actor loss trains "
          "the action model through the imagined rollout (adding to the transition's and reward model's gradients); "
          "the value loss trains the value model.")
GRADS = ["encoder.parameters()", "action_model.parameters()", "value_model.parameters()"]

torch.manual_seed(0)
S, A = 8, 2
encoder, decoder = nn.Linear(10, S), nn.Linear(S, 10)
transition, reward_model = nn.Linear(S + A, S), nn.Linear(S, 1)
action_model, value_model = nn.Linear(S, A), nn.Linear(S, 1)
model_modules = [encoder, decoder, transition, reward_model]
model_optimizer = torch.optim.Adam([p for m in model_modules for p in m.parameters()], lr=1e-3)
actor_optimizer = torch.optim.Adam(action_model.parameters(), lr=1e-3)
value_optimizer = torch.optim.Adam(value_model.parameters(), lr=1e-3)
for itr in range(2):
    obs, act, rew = torch.randn(6, 10), torch.randn(6, A), torch.randn(6, 1)
    post = torch.tanh(encoder(obs))
    prior = torch.tanh(transition(torch.cat([post, act], 1)))
    model_loss = F.mse_loss(decoder(post), obs) + F.mse_loss(reward_model(prior), rew) + F.mse_loss(prior, post.detach())
    state, returns = post.detach(), 0
    for t in range(3):                                   # imagination through the learned transition
        state = torch.tanh(transition(torch.cat([state, torch.tanh(action_model(state))], 1)))
        returns = returns + 0.99 ** t * reward_model(state)
    actor_loss = -(returns + value_model(state).detach()).mean()
    value_loss = F.mse_loss(value_model(state.detach()), returns.detach())
    model_optimizer.zero_grad()
    model_loss.backward()
    model_optimizer.step()  # BUG
    # FIX: pass
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()  # BUG
    # FIX: pass
    value_optimizer.zero_grad()
    value_loss.backward()
    value_optimizer.step()  # BUG
    # FIX: model_optimizer.step(); actor_optimizer.step(); value_optimizer.step()
