import torch

torch.manual_seed(0)

q = (torch.randn(2, 4, 16) * 100).half().requires_grad_()
k = (torch.randn(2, 4, 16) * 100).half()
v = torch.randn(2, 4, 16).half()
attn = torch.bmm(q, k.transpose(1, 2))  # <- nan
attn = torch.softmax(attn, dim=-1)
out = torch.bmm(attn, v)
out.float().sum().backward()
print(out.isnan().any())
