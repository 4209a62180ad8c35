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

    def forward(self, x):
        w1, w2 = (torch.sin(u) / torch.norm(u) for u in (self.u1, self.u2))
        return F.linear(F.relu(F.linear(x, w1)), w2)


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
before = [p.detach().clone() for p in model.parameters()]
optimizer.zero_grad()
F.cross_entropy(model(x), y).backward()
optimizer.step()
for (name, p), b in zip(model.named_parameters(), before):
    assert p.grad is not None and not torch.equal(p, b), name
print("u1 and u2 got gradients and changed")
