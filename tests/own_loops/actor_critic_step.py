"""Actor-critic with a shared trunk and two optimizers: the critic (and trunk) are stepped before the
actor's loss is backpropagated through the trunk the step just changed."""
import torch
import torch.nn as nn

INTENT = ("The critic loss trains the trunk and the critic; the actor loss trains the actor only, "
          "with the trunk's features as they were before the critic's step.")
GRADS = ["actor.parameters()", "trunk.parameters()", "critic.parameters()"]
RULE = "inplace-optimizer-step"
KIND = "detach-at-use"

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
actor, critic = nn.Linear(32, 2), nn.Linear(32, 1)
opt_c = torch.optim.SGD([*trunk.parameters(), *critic.parameters()], lr=1e-2)
opt_a = torch.optim.SGD(actor.parameters(), lr=1e-2)
for _episode in range(3):
    s = torch.randn(16, 4)
    feats = trunk(s)
    value = critic(feats).squeeze(1)
    logp = torch.log_softmax(actor(feats), 1)  # BUG
    # FIX: logp = torch.log_softmax(actor(feats.detach()), 1)
    a = torch.randint(0, 2, (16,))
    ret = torch.randn(16)
    adv = ret - value
    critic_loss = adv.pow(2).mean()
    actor_loss = -(logp[torch.arange(16), a] * adv.detach()).mean()
    opt_c.zero_grad()
    critic_loss.backward(retain_graph=True)
    opt_c.step()
    opt_a.zero_grad()
    actor_loss.backward()
    opt_a.step()
