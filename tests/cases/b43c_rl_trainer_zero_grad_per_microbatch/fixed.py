# Shape of pytorch/torchtitan PR #3575 ("[rl][bug] Fix gradient accumulation zero grad"):
# the RL trainer exposes a tinker-style API, forward_backward(microbatch) and
# optim_step(); the controller calls forward_backward once per micro-batch and
# then optim_step once. zero_grad sat in forward_backward, so every micro-batch
# wiped the gradients of the previous ones: no accumulation, only the last
# micro-batch reaches the optimizer.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class PolicyModel(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = torch.tanh(self.proj(self.embed(tokens)))
        return self.head(h)


class Trainer:
    def __init__(self, model, lr=1e-2, grad_accum_steps=4):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.grad_accum_steps = grad_accum_steps

    def forward_backward(self, microbatch):
        tokens, advantages = microbatch
        logits = self.model(tokens[:, :-1])
        logprobs = F.log_softmax(logits.float(), dim=-1)
        token_logprobs = logprobs.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
        loss = -(advantages.unsqueeze(-1) * token_logprobs).mean()
        (loss / self.grad_accum_steps).backward()
        return loss.detach()

    def optim_step(self):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1.0)
        self.optimizer.step()
        self.optimizer.zero_grad()


model = PolicyModel()
trainer = Trainer(model)

microbatches = [
    (torch.randint(0, 32, (4, 9)), torch.randn(4)) for _ in range(trainer.grad_accum_steps)
]

# Reference: the gradient the accumulated step should see (sum over micro-batches).
ref = PolicyModel()
ref.load_state_dict(model.state_dict())
for tokens, adv in microbatches:
    lp = F.log_softmax(ref(tokens[:, :-1]).float(), -1).gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
    (-(adv.unsqueeze(-1) * lp).mean() / trainer.grad_accum_steps).backward()

# Controller
for mb in microbatches:
    trainer.forward_backward(mb)
grad = model.head.weight.grad
print("accumulated head.weight.grad norm:", grad.norm().item())
print("expected (all micro-batches)     :", ref.head.weight.grad.norm().item())
print("matches full accumulation:", torch.allclose(grad, ref.head.weight.grad, atol=1e-6))
trainer.optim_step()
