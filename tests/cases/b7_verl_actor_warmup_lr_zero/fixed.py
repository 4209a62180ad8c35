"""The fixed twin: the warmup factor starts above zero, (current_step + 1) / warmup_steps, so the first policy
update already moves the actor (verl-project/verl#3674)."""
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
actor_optimizer = torch.optim.AdamW(actor.parameters(), lr=1e-3)
num_warmup_steps = 3


def lr_lambda(current_step):
    return min(1.0, (current_step + 1) / num_warmup_steps)


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
