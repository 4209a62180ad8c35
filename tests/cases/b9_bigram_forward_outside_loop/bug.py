"""makemore's bigram network (karpathy/nn-zero-to-hero#31): the forward pass (one-hot inputs, logits, counts,
probabilities, loss) is computed once, and only the backward pass and the update are repeated, so the second
loss.backward() raises "Trying to backward through the graph a second time"; the forward pass must run inside
the loop on the updated W."""
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(2147483647)
xs = torch.tensor([0, 5, 13, 13, 1])
ys = torch.tensor([5, 13, 13, 1, 0])
W = torch.randn((27, 27), generator=g, requires_grad=True)
xenc = F.one_hot(xs, num_classes=27).float()
logits = xenc @ W  # <- autograd_error
counts = logits.exp()
probs = counts / counts.sum(1, keepdims=True)
loss = -probs[torch.arange(5), ys].log().mean()
for k in range(10):
    print(f"iteration {k}: loss {loss.item():.4f}")
    W.grad = None
    loss.backward()
    W.data += -0.1 * W.grad
