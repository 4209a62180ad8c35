"""fast-transformers recurrent linear attention (idiap/fast-transformers#10): RecurrentLinearAttention updates its
carried state in place (`Zi += K`, `Si += einsum(K, V)`). Run token by token in training, the state of step t was
saved by the einsums that made step t's output, so the next step's in-place update breaks backward with "one of the
variables needed for gradient computation has been modified by an inplace operation" (the PR writes `Zi = Zi + K`)."""
import torch
import torch.nn.functional as F
from torch import nn


class RecurrentLinearAttention(nn.Module):
    def __init__(self, d_model=16, heads=2):
        super().__init__()
        self.heads, self.d = heads, d_model // heads
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, state=None):
        N = x.shape[0]
        Q = F.elu(self.q(x).view(N, self.heads, self.d)) + 1
        K = F.elu(self.k(x).view(N, self.heads, self.d)) + 1
        value = self.v(x).view(N, self.heads, self.d)
        if state is None:
            Si = x.new_zeros((N, self.heads, self.d, self.d))
            Zi = x.new_zeros((N, self.heads, self.d))
        else:
            Si, Zi = state
        Zi += K
        Si += torch.einsum("nhd,nhm->nhdm", K, value)  # <- inplace_saved
        Z = 1.0 / (torch.einsum("nhd,nhd->nh", Q, Zi) + 1e-6)
        V = torch.einsum("nhd,nhdm,nh->nhm", Q, Si, Z)
        return self.out(V.reshape(N, -1)), [Si, Zi]


torch.manual_seed(0)
layer = RecurrentLinearAttention()
optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3)
seq, target = torch.randn(5, 4, 16), torch.randn(5, 4, 16)
state, loss = None, 0.0
for t in range(seq.shape[0]):
    y, state = layer(seq[t], state)
    loss = loss + F.mse_loss(y, target[t])
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
