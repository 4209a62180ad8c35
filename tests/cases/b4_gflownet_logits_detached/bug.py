"""A GFlowNet environment's get_logprobs clones the policy outputs with .detach()
(alexhernandezgarcia/gflownet#251, 'reason why TB was not training well'): the trajectory-balance loss
still trains logZ, but the forward policy gets no gradient at all."""
import torch
from torch import nn


def get_logprobs(policy_outputs, actions, mask_invalid):
    logits = policy_outputs.clone().detach()  # <- detach
    logits[mask_invalid] = -float("inf")
    logprobs = torch.log_softmax(logits, dim=1)
    return logprobs.gather(1, actions.view(-1, 1)).squeeze(1)


torch.manual_seed(0)
forward_policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
logZ = nn.Parameter(torch.zeros(1))
optimizer = torch.optim.Adam([{"params": forward_policy.parameters()}, {"params": [logZ], "lr": 0.1}], lr=1e-3)
states = torch.randn(6, 4)
actions = torch.tensor([0, 2, 1, 0, 1, 2])
mask_invalid = torch.zeros(6, 3, dtype=torch.bool)
mask_invalid[0, 1] = True
log_reward = torch.tensor(1.5)
for step in range(3):
    logprobs_f = get_logprobs(forward_policy(states), actions, mask_invalid)
    loss = (logZ + logprobs_f.sum() - log_reward).pow(2).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: TB loss {loss.item():.4f} logZ {logZ.item():.3f}")
print("policy grad:", forward_policy[2].weight.grad)
