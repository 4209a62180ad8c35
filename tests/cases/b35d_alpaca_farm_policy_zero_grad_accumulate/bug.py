# PPO step_with_rollouts (alpaca_farm rl_trainer shape) with gradient accumulation.
# A tiny stand-in for accelerate's accumulate()/AcceleratedOptimizer: on non-sync micro-batches
# the wrapped optimizer's step() and zero_grad() are no-ops. The loop clears grads through the
# *model* (policy.zero_grad), which is never gated, so each micro-batch wipes the previous ones.
import contextlib

import torch
import torch.nn as nn

torch.manual_seed(0)


class AcceleratedOptimizer:
    def __init__(self, optimizer, accelerator):
        self.optimizer = optimizer
        self.accelerator = accelerator

    def step(self):
        if self.accelerator.sync_gradients:
            self.optimizer.step()

    def zero_grad(self, set_to_none=True):
        if self.accelerator.sync_gradients:
            self.optimizer.zero_grad(set_to_none=set_to_none)


class Accelerator:
    def __init__(self, gradient_accumulation_steps):
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.step = 0
        self.sync_gradients = True

    @contextlib.contextmanager
    def accumulate(self, model):
        self.step += 1
        self.sync_gradients = self.step % self.gradient_accumulation_steps == 0
        yield

    def backward(self, loss):
        (loss / self.gradient_accumulation_steps).backward()


class Policy(nn.Module):
    def __init__(self, vocab=10, dim=8):
        super().__init__()
        self.base = nn.Sequential(nn.Embedding(vocab, dim), nn.Linear(dim, dim), nn.Tanh())
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, queries, responses):
        h = self.base(torch.cat([queries, responses], dim=1))
        logits = self.lm_head(h[:, queries.shape[1] - 1 : -1])
        return torch.log_softmax(logits, -1).gather(2, responses.unsqueeze(-1)).squeeze(-1)


def compute_loss(policy, batch):
    logprobs = policy(batch["queries"], batch["responses"])
    ratio = torch.exp(logprobs - batch["old_logprobs"])
    pg_losses = -batch["advantages"] * ratio
    pg_losses2 = -batch["advantages"] * torch.clamp(ratio, 0.8, 1.2)
    return torch.max(pg_losses, pg_losses2).mean()


accelerator = Accelerator(gradient_accumulation_steps=4)
policy = Policy()
optimizer = AcceleratedOptimizer(torch.optim.Adam(policy.parameters(), lr=1e-3), accelerator)

rollouts = []
for _ in range(4):
    q, r = torch.randint(0, 10, (2, 3)), torch.randint(0, 10, (2, 4))
    rollouts.append(dict(queries=q, responses=r, old_logprobs=torch.full((2, 4), -2.3), advantages=torch.randn(2, 4)))

w = policy.lm_head.weight
expected = torch.zeros_like(w)
for batch_idx, rollouts_batch in enumerate(rollouts, 1):
    with accelerator.accumulate(policy):
        ppo_loss = compute_loss(policy, rollouts_batch)
        expected += torch.autograd.grad(ppo_loss / 4, w, retain_graph=True)[0]
        accelerator.backward(ppo_loss)
        if accelerator.sync_gradients:
            print("grad holds all micro-batches:", torch.allclose(w.grad, expected), "| grad norm", w.grad.norm().item(), "expected", expected.norm().item())
        optimizer.step()
        policy.zero_grad(set_to_none=True)  # <- optimizer
