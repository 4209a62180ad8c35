"""The fixed twin: the attention loss keeps its graph, so it trains the student (bboylyg/NAD#8)."""
import torch
import torch.nn.functional as F
from torch import nn


def attention_map(fm):
    return F.normalize(fm.pow(2).mean(1).flatten(1), dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        f = self.body(x)
        return f, self.head(f.mean((2, 3)))


torch.manual_seed(0)
teacher, student = Net(), Net()
optimizer = torch.optim.SGD(student.parameters(), lr=0.05)
x, y = torch.randn(32, 3, 8, 8), torch.randint(0, 4, (32,))
with torch.no_grad():
    t_feat, _ = teacher(x)
for step in range(40):
    s_feat, logits = student(x)
    at_loss = (attention_map(s_feat) - attention_map(t_feat)).pow(2).sum(1).mean()
    loss = F.cross_entropy(logits, y) + 100.0 * at_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 13 == 0 or step == 39:
        print(f"step {step}: attention distance {at_loss.item():.5f}")
