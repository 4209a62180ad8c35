"""The actor update of verl with a constant LR and linear warmup (verl-project/verl#3674): the warmup factor is
current_step / warmup_steps and the scheduler steps after update_policy, so the first policy update runs with a
learning rate of 0; the rollout's gradients change nothing and the actor after step 1 equals the actor before."""
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
actor_optimizer = torch.optim.AdamW(actor.parameters(), lr=1e-3)
num_warmup_steps = 3


def lr_lambda(current_step):
    return min(1.0, current_step / num_warmup_steps)  # <- no_update


actor_lr_scheduler = LambdaLR(actor_optimizer, lr_lambda)


def update_policy(obs, actions, advantages):
    logp = torch.log_softmax(actor(obs), -1).gather(1, actions[:, None]).squeeze(1)
    loss = -(logp * advantages).mean()
    actor_optimizer.zero_grad()
    loss.backward()
    actor_optimizer.step()
    return loss.item()


for step in range(3):
    before = actor[2].weight.detach().clone()
    obs, actions, advantages = torch.randn(16, 8), torch.randint(0, 4, (16,)), torch.randn(16)
    loss = update_policy(obs, actions, advantages)
    actor_lr_scheduler.step()
    print(f"update {step}: pg loss {loss:.4f}, actor changed: {not torch.equal(before, actor[2].weight)}")
