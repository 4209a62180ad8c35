"""The optimizer step fused into the backward pass, as PyTorch's tutorial "How to save memory by fusing the
optimizer step into the backward pass" writes it: one optimizer per parameter, stepped and cleared by a
post-accumulate-grad hook as soon as that parameter's gradient is ready, so no ``.grad`` outlives the backward."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 3))
    optimizer_dict = {p: torch.optim.Adam([p], lr=1e-2, foreach=False) for p in model.parameters()}

    def optimizer_hook(parameter) -> None:
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(optimizer_hook)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for step in range(5):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        print(f"step {step} loss {loss.item():.6f} grads left {sum(p.grad is not None for p in model.parameters())}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
