"""The fixed twin: the decoupling losses are stacked, so the term keeps its graph (thuml/predrnn-pytorch#11)."""
import torch
import torch.nn.functional as F
from torch import nn


class SpatioTemporalCell(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gates = nn.Linear(2 * d, 2 * d)

    def forward(self, x, h, memory):
        delta_c, delta_m = torch.tanh(self.gates(torch.cat([x, h], 1))).chunk(2, 1)
        memory = memory + delta_m
        h = torch.tanh(h + delta_c + memory)
        return h, memory, delta_c, delta_m


class PredRNN(nn.Module):
    def __init__(self, d=8, decouple_beta=0.1):
        super().__init__()
        self.cell = SpatioTemporalCell(d)
        self.adapter = nn.Linear(d, d, bias=False)
        self.conv_last = nn.Linear(d, d)
        self.decouple_beta = decouple_beta

    def forward(self, frames):
        h = memory = torch.zeros_like(frames[0])
        next_frames, decouple_loss = [], []
        for x in frames[:-1]:
            h, memory, delta_c, delta_m = self.cell(x, h, memory)
            delta_c = F.normalize(self.adapter(delta_c), dim=1)
            delta_m = F.normalize(self.adapter(delta_m), dim=1)
            decouple_loss.append(torch.mean(torch.abs(torch.cosine_similarity(delta_c, delta_m, dim=1))))
            next_frames.append(self.conv_last(h))
        decouple_loss = torch.mean(torch.stack(decouple_loss))
        loss = F.mse_loss(torch.stack(next_frames), frames[1:]) + self.decouple_beta * decouple_loss
        return loss


torch.manual_seed(0)
model = PredRNN()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
frames = torch.randn(6, 16, 8)
adapter_before = model.adapter.weight.detach().clone()
for step in range(10):
    loss = model(frames)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; adapter grad set: {model.adapter.weight.grad is not None}; "
      f"adapter changed: {not torch.equal(model.adapter.weight, adapter_before)}")
