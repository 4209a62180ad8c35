"""nystrom-attention (lucidrains/nystrom-attention#13), the attention behind TransMIL-style slide classifiers: the
forward splits `to_qkv(x)` with `.chunk(3)`, rearranges each part into heads and then scales the queries in place,
`q *= self.scale`. q is a view of one output of chunk, a function that returns several views, so PyTorch 2.x refuses
the write with "Output 0 of PermuteBackward0 is a view and is being modified inplace" (later versions: `q = q * scale`)."""
import torch
import torch.nn.functional as F
from torch import nn


def moore_penrose_iter_pinv(x, iters=6):
    abs_x = x.abs()
    z = x.transpose(-1, -2) / (abs_x.sum(dim=-1).max() * abs_x.sum(dim=-2).max())
    eye = torch.eye(x.shape[-1])
    for _ in range(iters):
        xz = x @ z
        z = 0.25 * z @ (13 * eye - xz @ (15 * eye - xz @ (7 * eye - xz)))
    return z


class NystromAttention(nn.Module):
    def __init__(self, dim=32, heads=4, num_landmarks=4):
        super().__init__()
        self.heads, self.num_landmarks, self.scale = heads, num_landmarks, (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3) for t in (q, k, v))
        q = q * self.scale
        q_land = q.reshape(b, self.heads, self.num_landmarks, n // self.num_landmarks, -1).mean(dim=3)
        k_land = k.reshape(b, self.heads, self.num_landmarks, n // self.num_landmarks, -1).mean(dim=3)
        attn1 = (q @ k_land.transpose(-1, -2)).softmax(dim=-1)
        attn2 = (q_land @ k_land.transpose(-1, -2)).softmax(dim=-1)
        attn3 = (q_land @ k.transpose(-1, -2)).softmax(dim=-1)
        out = (attn1 @ moore_penrose_iter_pinv(attn2)) @ (attn3 @ v)
        return self.to_out(out.permute(0, 2, 1, 3).reshape(b, n, -1))


torch.manual_seed(0)
attn, classifier = NystromAttention(), nn.Linear(32, 2)
optimizer = torch.optim.Adam(list(attn.parameters()) + list(classifier.parameters()), lr=2e-4)
params = list(attn.parameters()) + list(classifier.parameters())
before = [p.detach().clone() for p in params]
patches, label = torch.randn(1, 16, 32), torch.tensor([1])
loss = F.cross_entropy(classifier(attn(patches).mean(dim=1)), label)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
print("every parameter got a grad and changed:",
      all(p.grad is not None and not torch.equal(b, p) for b, p in zip(before, params)))
