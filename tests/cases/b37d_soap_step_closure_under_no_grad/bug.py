"""HomebrewML/HeavyBall#10: the SOAP optimizer's step() is decorated with @torch.no_grad() and calls
`loss = closure()` directly, so the closure's forward pass is recorded without grad and its
loss.backward() raises "element 0 of tensors does not require grad and does not have a grad_fn"."""
import torch
from torch import nn
import torch.nn.functional as F


class PrecondScheduleForeachSOAP(torch.optim.Optimizer):
    def __init__(self, params, lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            loss = None
        else:
            loss = closure()  # <- no_grad
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            ps = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in ps]
            for p in ps:
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
            exp_avg = [self.state[p]["exp_avg"] for p in ps]
            exp_avg_sq = [self.state[p]["exp_avg_sq"] for p in ps]
            for p in ps:
                self.state[p]["step"] += 1
            step = self.state[ps[0]]["step"]
            torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sq, beta2)
            torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - beta2)
            denom = torch._foreach_sqrt(exp_avg_sq)
            torch._foreach_add_(denom, group["eps"])
            update = torch._foreach_div(exp_avg, denom)
            bias = (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
            torch._foreach_mul_(ps, 1 - group["lr"] * group["weight_decay"])
            torch._foreach_add_(ps, update, alpha=-group["lr"] * bias)
        return loss


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1))
optimizer = PrecondScheduleForeachSOAP(model.parameters(), lr=1e-2)
x, y = torch.randn(64, 8), torch.randn(64, 1)
before = model[0].weight.detach().clone()

for it in range(5):
    def closure():
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(f"iter {it}: loss {loss.item():.4f}")
print("first layer changed:", not torch.equal(before, model[0].weight))
