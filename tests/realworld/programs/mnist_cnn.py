"""MNIST-style classifier in the shape of pytorch/examples mnist: Adadelta, StepLR, train()/test()."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 * 5 * 5, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def train(model, data, optimizer, epoch):
    model.train()
    for batch_idx, (x, target) in enumerate(data):
        optimizer.zero_grad()
        output = model(x)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}")


def test(model, data):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for x, target in data:
            output = model(x)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    print(f"Test set: Average loss: {test_loss / 64:.4f}, Accuracy: {correct}/64")


def main():
    torch.manual_seed(1)
    torch.set_num_threads(1)
    data = [(torch.randn(16, 1, 14, 14), torch.randint(0, 10, (16,))) for _ in range(4)]
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, 3):
        train(model, data, optimizer, epoch)
        test(model, data)
        scheduler.step()
    print("checksum", sum(p.sum().item() for p in model.parameters()))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
