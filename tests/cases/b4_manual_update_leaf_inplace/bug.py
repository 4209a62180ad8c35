"""SparseLLM's scaling-matrix update (BaiTheBest/SparseLLM#13): `s_batch -= lr * s_batch.grad` runs
with grad mode on, and PyTorch raises "a leaf Variable that requires grad is being used in an
in-place operation"."""
import torch

torch.manual_seed(0)
W, target = torch.randn(6, 8), torch.randn(6, 4)
s = torch.randn(8, 12)
s_learning_rate = 0.05
for chunk in (slice(0, 4), slice(4, 8)):
    s_batch = s[:, chunk].clone().requires_grad_(True)
    for it in range(3):
        loss_s = ((W @ s_batch) - target).pow(2).mean()
        loss_s.backward()
        s_batch -= s_learning_rate * s_batch.grad  # <- autograd_error
        s_batch.grad.zero_()
        print(f"chunk {chunk.start}: loss {loss_s.item():.4f}")
    s[:, chunk] = s_batch.detach()
