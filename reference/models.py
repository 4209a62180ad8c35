"""The networks the reference L2C trains (without the algorithm's state: alpha lives in `reference.l2c`)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CNNCifar(nn.Module):
    """LeNet-style CNN for 3x32x32 inputs: conv 3->6->16 (kernel 5) with 2x2 max-pooling, fc 400->120->84->classes.

    Returns log-probabilities (log_softmax), so the matching loss is `F.nll_loss`.
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=1)


class MLP(nn.Module):
    """Two-layer perceptron on flattened images (the digits' 1x8x8); returns log-probabilities like `CNNCifar`."""

    def __init__(self, in_features: int, num_classes: int = 10, hidden: int = 64) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.fc2(F.relu(self.fc1(x.flatten(1)))), dim=1)


def model_for(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """`CNNCifar` for 3x32x32 images, an `MLP` for anything else (the 1x8x8 digits)."""
    if tuple(input_shape) == (3, 32, 32):
        return CNNCifar(num_classes)
    return MLP(math.prod(input_shape), num_classes)
