"""Compressive Transformer memory (lucidrains/compressive-transformer-pytorch#5): the attention-reconstruction
aux_loss compares attention over the compressed memory with attention over the old memory, but the compressed memory
is detached, so aux_loss reaches no weight and the compression conv never trains."""
import torch
import torch.nn.functional as F
from torch import nn


class MemoryAttention(nn.Module):
    def __init__(self, dim=8, ratio=4):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.compress = nn.Conv1d(dim, dim, ratio, stride=ratio)

    def forward(self, x, mem):
        q = self.to_q(x)
        attend = lambda query, kv: torch.softmax(query @ kv.transpose(1, 2), -1) @ kv
        out = attend(q, torch.cat([mem, x], 1))
        old_mem, q_d = mem.detach(), q.detach()
        cmem = self.compress(old_mem.transpose(1, 2)).transpose(1, 2).detach()  # <- cut_term
        aux_loss = F.mse_loss(attend(q_d, cmem), attend(q_d, old_mem))
        return out, aux_loss


torch.manual_seed(0)
layer = MemoryAttention()
optimizer = torch.optim.Adam(layer.parameters(), lr=1e-2)
x, mem, target = torch.randn(2, 6, 8), torch.randn(2, 16, 8), torch.randn(2, 6, 8)
for step in range(20):
    out, aux_loss = layer(x, mem)
    loss = F.mse_loss(out, target) + aux_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("compress conv got a gradient:", layer.compress.weight.grad is not None, "aux loss", round(aux_loss.item(), 4))
