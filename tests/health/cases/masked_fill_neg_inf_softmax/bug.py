import numpy as np
import torch

torch.manual_seed(0)


def scaled_dot_product_attention(q, k, v, d_k, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -np.inf)  # <- nan
    scores = (scores - scores.max()).softmax(dim=-1)
    return torch.matmul(scores, v)


q = torch.randn(2, 3, 8, requires_grad=True)
k = torch.randn(2, 3, 8)
v = torch.randn(2, 3, 8)
mask = torch.ones(2, 3, 3)
mask[1] = 0  # a history with no valid item
out = scaled_dot_product_attention(q, k, v, 8, mask)
out.sum().backward()
print(q.grad)
