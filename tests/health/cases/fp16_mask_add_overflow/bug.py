import torch

torch.manual_seed(0)

bsz, heads, tgt, src = 2, 2, 3, 3
scores = (torch.randn(bsz, heads, tgt, src) * 4 - 40).half().requires_grad_()
padding = torch.zeros(bsz, 1, 1, src, dtype=torch.float16)
padding[1] = torch.finfo(torch.float16).min  # the second sequence is all padding
attn_weights = scores + padding  # <- nan
attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1)
attn_weights.float().sum().backward()
print(attn_weights[1])
