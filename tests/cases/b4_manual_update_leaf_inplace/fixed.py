"""The fixed twin: the manual update runs under torch.no_grad(), as an optimizer's step does."""
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
        with torch.no_grad():
            s_batch -= s_learning_rate * s_batch.grad
        s_batch.grad.zero_()
        print(f"chunk {chunk.start}: loss {loss_s.item():.4f}")
    s[:, chunk] = s_batch.detach()
