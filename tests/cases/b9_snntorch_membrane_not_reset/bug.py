"""A spiking CNN (jeshraghian/snntorch#250): the leaky neurons keep their membrane potential on the module between
batches, and forward continues from it instead of resetting the hidden state, so the second batch's graph reaches
into the first batch's freed graph and backward raises "Trying to backward through the graph a second time" (the
fix resets the hidden states at the start of forward)."""
import torch
import torch.nn.functional as F
from torch import nn


class Leaky(nn.Module):
    def __init__(self, beta=0.9):
        super().__init__()
        self.beta = beta
        self.mem = torch.zeros(1)

    def forward(self, cur, mem):
        mem = self.beta * mem + cur
        spk = torch.sigmoid(5 * (mem - 1.0))
        return spk, mem - spk


class SNN(nn.Module):
    def __init__(self, num_steps=5):
        super().__init__()
        self.num_steps = num_steps
        self.fc1, self.lif1 = nn.Linear(20, 16), Leaky()
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        mem = self.lif1.mem  # <- autograd_error
        spk_rec = []
        for _ in range(self.num_steps):
            spk, mem = self.lif1(self.fc1(x), mem)
            spk_rec.append(self.fc2(spk))
        self.lif1.mem = mem
        return torch.stack(spk_rec).mean(0)


torch.manual_seed(0)
net = SNN()
optimizer = torch.optim.Adam(net.parameters(), lr=5e-3)
for step in range(4):
    x, y = torch.randn(8, 20), torch.randint(0, 2, (8,))
    loss = F.cross_entropy(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
