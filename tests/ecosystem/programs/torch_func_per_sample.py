"""Per-sample gradients as in PyTorch's tutorial (torch.func): params = {k: v.detach() for k, v in
model.named_parameters()}, vmap(grad(compute_loss)) over functional_call, then DP-SGD style: clip
each sample's gradient, add noise, write the mean into p.grad and call optimizer.step()."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.fc1 = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = SimpleCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    max_norm, noise_multiplier = 1.0, 0.5

    def compute_loss(params, buffers, sample, target):
        batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return F.nll_loss(predictions, targets)

    ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
    for step in range(3):
        data, targets = torch.randn(8, 1, 14, 14), torch.randint(0, 10, (8,))
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample_grads.values()]).norm(dim=0)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for name, p in model.named_parameters():
            g = per_sample_grads[name] * scale.view(-1, *[1] * (p.dim()))
            p.grad = (g.sum(0) + noise_multiplier * max_norm * torch.randn_like(p)) / data.shape[0]
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            loss = F.nll_loss(model(data), targets)
        print(f"step {step} loss {loss.item():.6f} mean per-sample norm {norms.mean().item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
