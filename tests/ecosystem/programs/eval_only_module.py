"""A generator trained against a fixed loss while a second network is only evaluated: a "judge"
classifier (as in an Inception-score or reward probe) is built, called on the generated samples
outside no_grad for logging, and never given to an optimizer or to the loss."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Judge(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    generator = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 8))
    judge = Judge()
    judge.eval()
    optimizer = torch.optim.Adam(generator.parameters(), lr=1e-2)
    target = torch.randn(8)
    for step in range(4):
        z = torch.randn(6, 3)
        samples = generator(z)
        loss = F.mse_loss(samples, target.expand_as(samples))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        probs = F.softmax(judge(samples), dim=-1)
        score = torch.exp((probs * (probs.log() - probs.mean(0, keepdim=True).log())).sum(1).mean())
        print(f"step {step} loss {loss.item():.6f} judge score {score.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(generator.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
