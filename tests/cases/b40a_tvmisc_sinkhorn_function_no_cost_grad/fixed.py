# Shape of t-vi/pytorch-tvmisc issue #10: the batched Sinkhorn OT
# autograd.Function (wasserstein-distance/Pytorch_Wasserstein.ipynb) returns
# None as the gradient of the cost matrix `dist`, so a learned ground cost
# never receives a gradient.
import math
import torch
import torch.nn as nn

torch.manual_seed(0)


def sinkstep(dist, log_nu, log_u, lam: float):
    # CPU fallback of the notebook's CUDA kernel:
    # log v_bj = log nu_bj - logsumexp_i(-dist_ij / lam + log u_bi)
    assert dist.dim() == 2 and log_nu.dim() == 2 and log_u.dim() == 2
    log_v = log_nu.clone()
    for b in range(log_u.size(0)):
        log_v[b] -= torch.logsumexp(-dist / lam + log_u[b, :, None], 0)
    return log_v


class SinkhornOT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mu, nu, dist, lam=1e-3, N=100):
        assert mu.dim() == 2 and nu.dim() == 2 and dist.dim() == 2
        bs = mu.size(0)
        d1, d2 = dist.size()
        assert nu.size(0) == bs and mu.size(1) == d1 and nu.size(1) == d2
        log_mu = mu.log()
        log_nu = nu.log()
        log_u = torch.full_like(mu, -math.log(d1))
        log_v = torch.full_like(nu, -math.log(d2))
        for i in range(N):
            log_v = sinkstep(dist, log_nu, log_u, lam)
            log_u = sinkstep(dist.t(), log_mu, log_v, lam)
        coupling = (log_u[:, :, None] - dist / lam + log_v[:, None, :]).exp()
        distances = (coupling * dist).sum((1, 2))
        ctx.log_v = log_v
        ctx.log_u = log_u
        ctx.dist = dist
        ctx.lam = lam
        return distances

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[:, None] * ctx.log_u * ctx.lam, grad_out[:, None] * ctx.log_v * ctx.lam, (grad_out[:, None, None] * (ctx.log_u[:, :, None] - ctx.dist / ctx.lam + ctx.log_v[:, None, :]).exp()).sum(0), None, None


class LearnedGroundCost(nn.Module):
    """Ground cost between histogram bins, from learned bin embeddings."""
    def __init__(self, n_bins, dim=2):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(n_bins, dim))

    def forward(self):
        return torch.cdist(self.emb, self.emb) ** 2 + 1e-3


n_bins, bs = 8, 4
cost = LearnedGroundCost(n_bins)
opt = torch.optim.SGD(cost.parameters(), lr=0.1)

mu = torch.softmax(torch.randn(bs, n_bins), 1)
nu = torch.softmax(torch.randn(bs, n_bins), 1)
target = torch.rand(bs)

before = cost.emb.detach().clone()
for step in range(3):
    opt.zero_grad()
    dist = cost()
    w = SinkhornOT.apply(mu, nu, dist, 0.5, 30)
    loss = ((w - target) ** 2).mean()
    loss.backward()
    opt.step()

print("loss:", loss.item())
print("emb.grad:", cost.emb.grad)
print("embeddings changed:", not torch.equal(before, cost.emb.detach()))
