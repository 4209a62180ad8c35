# [BUG] Lack of weight multiplication -- kyegomez/Mixture-of-Depths
# https://github.com/kyegomez/Mixture-of-Depths/issues/1
# What went wrong: MoD.forward picks the top-k tokens with the router logits
# (torch.topk -> indices -> gather), runs the block on them and scatter-adds the
# block output back, but never multiplies the block output by the router weights
# (paper Fig. 1). The router then reaches the loss only through integer indices,
# so router.weight.grad stays None and the router never learns.
# Fix (later main.py): softmax the top-k router weights, gather them in the
# sorted order and multiply: xw_out = r_weights * x_out, then scatter_add xw_out.
import torch
import torch.nn.functional as F
from torch import Tensor, nn

torch.manual_seed(0)


class FeedForward(nn.Module):  # stand-in for zeta.nn.FeedForward
    def __init__(self, dim, mult=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class MoD(nn.Module):
    def __init__(self, seq_len=None, dim=None, capacity_factor=None, transformer_block=None):
        super().__init__()
        self.seq_len = seq_len
        self.dim = dim
        self.capacity_factor = capacity_factor
        self.transformer_block = transformer_block
        self.router = nn.Linear(dim, 1, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        b, s, d = x.shape

        # Top k
        top_k = int(s * self.capacity_factor)

        # Scalar weights for each token
        router_logits = self.router(x)

        # Equation 1
        token_weights, token_index = torch.topk(router_logits, top_k, dim=1, sorted=False)

        # Selected
        selected_tokens, index = torch.sort(token_index, dim=1)

        # Select idx
        indices_expanded = selected_tokens.expand(-1, -1, self.dim)

        # Filtered topk tokens with capacity c
        filtered_x = torch.gather(input=x, dim=1, index=indices_expanded)

        if self.transformer_block:
            x_out = self.transformer_block(filtered_x)
        else:
            x_out = filtered_x

        # Softmax router weights
        token_weights = F.softmax(token_weights, dim=1)

        # Selecting router weight by idx
        r_weights = torch.gather(token_weights, dim=1, index=index)

        # Multiply by router weights
        xw_out = r_weights * x_out

        # Out
        out = torch.scatter_add(input=x, dim=1, index=indices_expanded, src=xw_out)
        return out


dim, seq_len = 16, 12
model = MoD(seq_len=seq_len, dim=dim, capacity_factor=0.5, transformer_block=FeedForward(dim))
head = nn.Linear(dim, 1)
optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-2)

x = torch.randn(4, seq_len, dim)
y = torch.randn(4, seq_len, 1)
for step in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(head(model(x)), y)
    loss.backward()
    optimizer.step()

print("loss", loss.item())
print("router grad:", model.router.weight.grad)
