"""The fixed twin: the accumulation condition is (batches_done + 1) % N == 0, so the optimizer steps every N-th
batch, every batch when N is 1 (eriklindernoren/PyTorch-YOLOv3#325)."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

opt = argparse.Namespace(epochs=2, gradient_accumulations=1)
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(8, 5 + 3, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dataloader = [(torch.randn(2, 3, 16, 16), torch.rand(2, 8, 16, 16)) for _ in range(4)]
for epoch in range(opt.epochs):
    for batch_i, (imgs, targets) in enumerate(dataloader):
        batches_done = len(dataloader) * epoch + batch_i
        outputs = model(imgs)
        loss = F.mse_loss(outputs.sigmoid(), targets)
        loss.backward()
        if (batches_done + 1) % opt.gradient_accumulations == 0:
            optimizer.step()
            optimizer.zero_grad()
    print(f"epoch {epoch}: loss {loss.item():.5f}")
