"""spikingjelly issue #419 (Chinese): a CrossViT whose Mlp uses a LIF neuron in place of nn.GELU. The LIF node keeps
its membrane potential self.v on the module between iterations, and the training loop never calls
functional.reset_net(model), so the next batch charges from the previous batch's v and its graph reaches back into
the previous batch's graph. engine.py already passes retain_graph=True to loss.backward, so instead of "backward
through the graph a second time" the second backward raises "modified by an inplace operation ... is at version N;
expected version N-1": optimizer.step() rewrote the weights that the previous graph saved. The fix (confirmed in the
thread and in #420) is functional.reset_net(model) after optimizer.step()."""
import math

import torch
from torch import nn


class ATanSpike(torch.autograd.Function):  # spikingjelly surrogate.ATan
    @staticmethod
    def forward(ctx, x, alpha=2.0):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        a = ctx.alpha
        return a / 2 / (1 + (math.pi / 2 * a * x) ** 2) * grad_output, None


class LIFNode(nn.Module):  # spikingjelly.clock_driven.neuron.LIFNode, single step, hard reset to 0
    def __init__(self, tau=2.0, v_threshold=1.0):
        super().__init__()
        self.tau, self.v_threshold = tau, v_threshold
        self.v = 0.0

    def reset(self):
        self.v = 0.0

    def forward(self, x):
        self.v = self.v + (x - self.v) / self.tau
        spike = ATanSpike.apply(self.v - self.v_threshold)
        self.v = (1.0 - spike) * self.v
        return spike


def reset_net(net):  # spikingjelly.clock_driven.functional.reset_net
    for m in net.modules():
        if hasattr(m, "reset"):
            m.reset()


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), LIFNode(), nn.Linear(hidden, dim)  # act was nn.GELU

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim), nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2, self.mlp = nn.LayerNorm(dim), Mlp(dim, dim * 4)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, dim=32, num_classes=10):
        super().__init__()
        self.patch = nn.Linear(48, dim)
        self.blocks = nn.Sequential(Block(dim), Block(dim))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.blocks(self.patch(x))
        return self.head(self.norm(x).mean(1))


def train_one_epoch(model, criterion, data_loader, optimizer, is_second_order=False):
    model.train()
    for samples, targets in data_loader:
        loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss.backward(create_graph=is_second_order, retain_graph=True)
        optimizer.step()  # <- inplace_saved
        print(f"loss {loss.item():.4f}")


torch.manual_seed(0)
model = TinyViT()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
data = [(torch.randn(8, 16, 48), torch.randint(0, 10, (8,))) for _ in range(3)]
train_one_epoch(model, nn.CrossEntropyLoss(), data, optimizer)
