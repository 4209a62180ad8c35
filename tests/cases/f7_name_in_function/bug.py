"""Leaves created inside a function; the cut happens there and the function returns before the end."""
import torch


def fit():
    torch.manual_seed(0)
    slope = torch.randn(1, requires_grad=True)
    intercept = torch.zeros(1, requires_grad=True)
    x = torch.linspace(0, 1, 20)
    y = 3 * x + 1
    for _ in range(3):
        with torch.no_grad():
            pred = slope * x  # <- no_grad
        loss = ((pred + intercept - y) ** 2).mean()
        loss.backward()
    return intercept.grad


fit()
