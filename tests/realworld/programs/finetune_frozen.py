"""Transfer learning in the shape of the torchvision fine-tuning tutorial: a pretrained backbone
(loaded from a state dict) is frozen with requires_grad = False, a new head replaces the last layer,
only the head is given to the optimizer; then the last block is unfrozen with a param group."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    pretrained = Backbone().state_dict()
    model = Backbone()
    model.load_state_dict(pretrained)
    for param in model.parameters():
        param.requires_grad = False
    num_ftrs = model.fc.in_features
    model.fc = nn.Linear(num_ftrs, 2)
    optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(8, 3, 6, 6), torch.randint(0, 2, (8,))
    for step in range(3):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"head step {step} loss {loss.item():.6f}")
    for param in model.features[3:].parameters():
        param.requires_grad = True
    optimizer.add_param_group({"params": model.features[3:].parameters(), "lr": 1e-3})
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"unfrozen step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
