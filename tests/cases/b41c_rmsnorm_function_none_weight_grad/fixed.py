# Full fine-tuning with a fused RMSNorm written as a custom autograd.Function
# (unsloth's Fast_RMS_Layernorm; the Triton kernels are re-written here in plain torch).
# Fix (PR #4550): the backward also computes dW = sum over rows of dY * normalized X.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Fast_RMS_Layernorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, eps, gemma=False):
        shape = X.shape
        dim = shape[-1]
        X = X.reshape(-1, dim)
        X32 = X.float()
        r = torch.rsqrt(X32.pow(2).mean(dim=-1) + eps)  # inverse rms per row
        W_row = (W + 1.0) if gemma else W
        Y = (X32 * r[:, None] * W_row).to(X.dtype)
        ctx.eps = eps
        ctx.GEMMA = gemma
        ctx.save_for_backward(X, W, r)
        return Y.view(*shape)

    @staticmethod
    def backward(ctx, dY):
        shape = dY.shape
        dim = shape[-1]
        dY = dY.reshape(-1, dim)
        X, W, r = ctx.saved_tensors
        n_cols = dim
        # dW = X
        normed = X.float() * r[:, None]
        W_row = (W + 1.0) if ctx.GEMMA else W
        dY_W = dY.float() * W_row
        rowsum = (dY_W * normed).sum(dim=-1, keepdim=True)
        dX = (r[:, None] / n_cols) * (n_cols * dY_W - normed * rowsum)
        dX = dX.to(dY.dtype).view(*shape)
        dW = (dY.float() * normed.to(W.dtype).float()).sum(dim=0).to(W.dtype)
        return dX, dW, None, None


def fast_rms_layernorm(layernorm, X, gemma=False):
    W = layernorm.weight
    eps = layernorm.variance_epsilon
    return Fast_RMS_Layernorm.apply(X, W, eps, gemma)


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, X):
        return fast_rms_layernorm(self, X, gemma=False)


class TinyLM(nn.Module):
    def __init__(self, vocab=32, hidden=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.norm = LlamaRMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        h = h + self.mlp(h)
        return self.lm_head(self.norm(h))


model = TinyLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)  # full fine-tuning
w0 = model.norm.weight.detach().clone()

for step in range(3):
    ids = torch.randint(0, 32, (4, 10))
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 32), ids[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    print("step", step, "norm.weight.grad:", model.norm.weight.grad[:4])
    optimizer.step()

print("RMSNorm weight changed:", not torch.equal(w0, model.norm.weight.detach()))
