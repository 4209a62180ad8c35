"""discuss.pytorch.org "What is the most convenient way to make model weights dependent on some parameter?"
(t/47645): the weights of a network are to be a function of a learnable u, w = sin(u) / ||u||, and u optimised. The
first idea, computing w from u and setting the layer's parameters to it, fails because nn.Parameter(w) starts a new
leaf that ignores the history of w: u never gets a gradient. The thread's solution: call the layers functionally
(F.linear / F.conv2d) on the computed weights."""
import torch
import torch.nn.functional as F
from torch import nn


class HyperNet(nn.Module):
    def __init__(self, in_dim=16, hidden=32, classes=4):
        super().__init__()
        self.u1 = nn.Parameter(torch.randn(hidden, in_dim))
        self.u2 = nn.Parameter(torch.randn(classes, hidden))
        self.fc1 = nn.Linear(in_dim, hidden, bias=False)
        self.fc2 = nn.Linear(hidden, classes, bias=False)

    def forward(self, x):
        for fc, u in ((self.fc1, self.u1), (self.fc2, self.u2)):
            fc.weight = nn.Parameter(torch.sin(u) / torch.norm(u))  # <- new_parameter
        return self.fc2(F.relu(self.fc1(x)))


torch.manual_seed(0)
model = HyperNet()
optimizer = torch.optim.SGD([model.u1, model.u2], lr=0.5)
x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("u1.grad:", model.u1.grad)
