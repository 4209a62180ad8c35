"""The fixed twin: the gate returns the Function's output, so the aux-loss gradient reaches the router."""
import torch
from torch import nn
import torch.nn.functional as F


class MoEAuxLossAutoScaler(torch.autograd.Function):
    @staticmethod
    def forward(ctx, output, aux_loss):
        ctx.save_for_backward(aux_loss)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (aux_loss,) = ctx.saved_tensors
        return grad_output, torch.ones_like(aux_loss)


class Gate(nn.Module):
    def __init__(self, dim, n_experts):
        super().__init__()
        self.n_experts = n_experts
        self.weight = nn.Linear(dim, n_experts, bias=False)

    def forward(self, x):
        scores = self.weight(x).softmax(dim=-1)
        weights, indices = scores.topk(1, dim=-1)
        load = F.one_hot(indices[:, 0], self.n_experts).float().mean(0)
        aux_loss = (load * scores.mean(0)).sum() * self.n_experts
        weights = MoEAuxLossAutoScaler.apply(weights, aux_loss)
        return weights, indices


class MoE(nn.Module):
    def __init__(self, dim=8, n_experts=4):
        super().__init__()
        self.gate = Gate(dim, n_experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_experts))

    def forward(self, x):
        weights, indices = self.gate(x)
        out = torch.stack([self.experts[int(i)](row) for row, i in zip(x, indices[:, 0])])
        return out * weights


torch.manual_seed(0)
model = MoE()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 8)
for step in range(3):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} router grad norm {model.gate.weight.weight.grad.norm():.6f}")
