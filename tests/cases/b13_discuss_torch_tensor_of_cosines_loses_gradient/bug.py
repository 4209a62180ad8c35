"""discuss.pytorch.org "Gradient is lost when use torch.tensor([t1, t2])" (t/23261): two angles a and b that require
grad go through cos, and the results are packed into a vector with `torch.tensor([cosa, cosb])` to multiply it by a
matrix; torch.tensor copies the values into a new leaf without history, so `y2.sum().backward()` raises "element 0 of
tensors does not require grad and does not have a grad_fn" and a never gets a gradient. The fix from the thread:
build the vector with torch.stack([cosa, cosb])."""
import torch

torch.manual_seed(0)
a = torch.tensor(0.3)
b = torch.tensor(-0.7)
a.requires_grad = True
b.requires_grad = True
mat = torch.tensor([[1.0, 2.0],
                    [3.0, 4.0]])
target = torch.tensor([2.0, 3.0])
for step in range(3):
    cosa = torch.cos(a)
    cosb = torch.cos(b)
    y1 = cosa + cosb
    y2 = torch.tensor([cosa, cosb])  # <- tensor_rewrap
    y2 = torch.matmul(y2, mat)
    loss = ((y2 - target) ** 2).sum()
    loss.backward()
    with torch.no_grad():
        a -= 0.01 * a.grad
        b -= 0.01 * b.grad
        a.grad.zero_()
        b.grad.zero_()
    print(f"step {step}: y1 {y1.item():.4f} loss {loss.item():.4f}")
