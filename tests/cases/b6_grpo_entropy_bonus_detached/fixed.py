"""The fixed twin: the entropy is detached only when no entropy bonus is asked for, so with entropy_coeff > 0
the bonus trains the policy."""
import torch
import torch.nn.functional as F
from torch import nn


def grpo_loss_fn(logits, input_ids, old_logp, advantages, loss_mask, eps_clip=0.2, entropy_coeff=0.0):
    logp_all = F.log_softmax(logits, dim=-1)
    logprobs = logp_all.gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    if entropy_coeff == 0.0:
        entropy = entropy.detach()
    ratio = torch.exp(logprobs - old_logp)
    pg_loss1 = -advantages * ratio
    pg_loss2 = -advantages * torch.clamp(ratio, 1.0 - eps_clip, 1.0 + eps_clip)
    denom = loss_mask.sum()
    pg_loss = (torch.max(pg_loss1, pg_loss2) * loss_mask).sum() / denom
    entropy_loss = -(entropy * loss_mask).sum() / denom
    return pg_loss + entropy_coeff * entropy_loss, entropy.mean()


torch.manual_seed(0)
prompts = torch.randint(0, 12, (4, 6))
input_ids = torch.randint(0, 12, (4, 6))
advantages = torch.randn(4, 1).expand(4, 6)
loss_mask = torch.ones(4, 6)
trained = {}
for entropy_coeff in (0.0, 0.5):
    torch.manual_seed(1)
    actor = nn.Sequential(nn.Embedding(12, 16), nn.Linear(16, 12))
    with torch.no_grad():
        old_logp = F.log_softmax(actor(prompts), -1).gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    optimizer = torch.optim.Adam(actor.parameters(), lr=1e-2)
    for step in range(3):
        loss, entropy = grpo_loss_fn(actor(prompts), input_ids, old_logp, advantages, loss_mask, entropy_coeff=entropy_coeff)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trained[entropy_coeff] = actor[1].weight.detach().clone()
    print(f"entropy_coeff {entropy_coeff}: loss {loss.item():.4f} entropy {entropy.item():.4f}")
print("the entropy bonus changes the policy:", not torch.equal(trained[0.0], trained[0.5]))
