"""The older hook-based reparametrisations still common in published code: torch.nn.utils.weight_norm
and torch.nn.utils.spectral_norm (weight_g / weight_v and weight_orig replace weight)."""
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=FutureWarning)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(2, 8, 3, padding=1))
        self.fc = nn.utils.spectral_norm(nn.Linear(8 * 10, 1))

    def forward(self, x):
        return self.fc(F.leaky_relu(self.conv(x), 0.2).flatten(1))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Critic()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(8, 2, 10), torch.randn(8, 1)
    for step in range(5):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
