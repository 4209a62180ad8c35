"""Fast weights kept in a list (MAML style); the first one is detached in the inner loss."""
import torch

torch.manual_seed(0)
fast_weights = [torch.randn(4, 4, requires_grad=True), torch.zeros(4, requires_grad=True)]
x, y = torch.randn(8, 4), torch.randn(8, 4)
for _ in range(2):
    w0 = fast_weights[0].detach()  # <- detach
    loss = ((x @ w0 + fast_weights[1] - y) ** 2).mean()
    loss.backward()
print(fast_weights[0].grad)  # <- symptom
