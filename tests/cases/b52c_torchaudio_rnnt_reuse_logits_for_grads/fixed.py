# RNN Transducer Loss Autograd Test / Remove reuse_logits_for_grads option for RNNTL
# https://github.com/pytorch/audio/pull/1532  (discussion)  -> fixed by https://github.com/pytorch/audio/pull/1610
# (see also https://github.com/pytorch/audio/pull/1536)
#
# What went wrong: torchaudio's prototype rnnt_loss defaulted to
# reuse_logits_for_grads=True: to save memory the kernel wrote the gradients
# into the `logits` input tensor in place and returned that buffer as the
# gradient. The input is silently overwritten, which autograd does not expect
# from a loss function: when the logits fed to the loss are a tensor that an
# earlier op saved for its own backward (here log_softmax with
# fused_log_softmax=False), the graph's saved value is clobbered and the
# autograd test of PR #1532 failed.
# Fix (PR #1610): remove the reuse_logits_for_grads option; gradients are
# always written to their own buffer and the logits are left untouched.
#
# The C++ RNNTLossFunction / rnnt_loss kernel is rewritten as a small
# plain-torch autograd.Function; the RNN-T model is a tiny stand-in for
# torchaudio.models.RNNT (_Transcriber / _Predictor / _Joiner).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def _logaddexp(a, b):
    return torch.logaddexp(a, b)


def _compute_alphas_betas_grads(log_probs, targets, logit_lengths, target_lengths, blank):
    """CPU kernel stand-in: costs and d(cost)/d(log_probs) for each utterance."""
    B, maxT, maxU1, V = log_probs.shape
    costs = torch.zeros(B, dtype=log_probs.dtype)
    grads = torch.zeros_like(log_probs)
    neg_inf = torch.tensor(float("-inf"), dtype=log_probs.dtype)
    for b in range(B):
        T = int(logit_lengths[b])
        U = int(target_lengths[b])
        lp = log_probs[b]
        y = targets[b]
        alpha = torch.full((T, U + 1), float("-inf"), dtype=log_probs.dtype)
        alpha[0, 0] = 0.0
        for t in range(T):
            for u in range(U + 1):
                if t == 0 and u == 0:
                    continue
                a = alpha[t - 1, u] + lp[t - 1, u, blank] if t > 0 else neg_inf
                e = alpha[t, u - 1] + lp[t, u - 1, y[u - 1]] if u > 0 else neg_inf
                alpha[t, u] = _logaddexp(a, e)
        beta = torch.full((T, U + 1), float("-inf"), dtype=log_probs.dtype)
        beta[T - 1, U] = lp[T - 1, U, blank]
        for t in range(T - 1, -1, -1):
            for u in range(U, -1, -1):
                if t == T - 1 and u == U:
                    continue
                a = beta[t + 1, u] + lp[t, u, blank] if t < T - 1 else neg_inf
                e = beta[t, u + 1] + lp[t, u, y[u]] if u < U else neg_inf
                beta[t, u] = _logaddexp(a, e)
        log_like = beta[0, 0]
        costs[b] = -log_like
        for t in range(T):
            for u in range(U + 1):
                if t < T - 1:
                    grads[b, t, u, blank] = -torch.exp(alpha[t, u] + lp[t, u, blank] + beta[t + 1, u] - log_like)
                elif u == U:
                    grads[b, t, u, blank] = -torch.exp(alpha[t, u] + lp[t, u, blank] - log_like)
                if u < U:
                    grads[b, t, u, y[u]] = -torch.exp(alpha[t, u] + lp[t, u, y[u]] + beta[t, u + 1] - log_like)
    return costs, grads


class RNNTLossFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, logit_lengths, target_lengths, blank, clamp,
                fused_log_softmax):
        if fused_log_softmax:
            log_probs = logits.log_softmax(dim=-1)
        else:
            log_probs = logits
        costs, gradients = _compute_alphas_betas_grads(log_probs, targets, logit_lengths, target_lengths, blank)
        if fused_log_softmax:
            gradients = gradients - log_probs.exp() * gradients.sum(dim=-1, keepdim=True)
        if clamp > 0:
            gradients = gradients.clamp(-clamp, clamp)
        ctx.save_for_backward(gradients)
        return costs

    @staticmethod
    def backward(ctx, output_gradients):
        (gradients,) = ctx.saved_tensors
        output_gradients = output_gradients.view(-1, 1, 1, 1).to(gradients)
        return gradients * output_gradients, None, None, None, None, None, None


def rnnt_loss(logits, targets, logit_lengths, target_lengths, blank=-1, clamp=-1,
              fused_log_softmax=True, reduction="mean"):
    if blank < 0:
        blank = logits.shape[-1] + blank
    costs = RNNTLossFunction.apply(logits, targets, logit_lengths, target_lengths, blank, clamp,
                                   fused_log_softmax)
    if reduction == "mean":
        return costs.mean()
    if reduction == "sum":
        return costs.sum()
    return costs


# ---- torchaudio.models.RNNT (tiny) ----
class _Transcriber(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim)

    def forward(self, input, lengths):
        return torch.tanh(self.linear(input)), lengths


class _Predictor(nn.Module):
    def __init__(self, num_symbols, output_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_symbols, output_dim)
        self.linear = nn.Linear(output_dim, output_dim)

    def forward(self, input, lengths):
        return torch.tanh(self.linear(self.embedding(input))), lengths


class _Joiner(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim)
        self.relu = nn.ReLU()

    def forward(self, source_encodings, source_lengths, target_encodings, target_lengths):
        joint_encodings = source_encodings.unsqueeze(2).contiguous() + target_encodings.unsqueeze(1).contiguous()
        output = self.linear(self.relu(joint_encodings))
        return output, source_lengths, target_lengths


class RNNT(nn.Module):
    def __init__(self, transcriber, predictor, joiner):
        super().__init__()
        self.transcriber = transcriber
        self.predictor = predictor
        self.joiner = joiner

    def forward(self, sources, source_lengths, targets, target_lengths):
        source_encodings, source_lengths = self.transcriber(sources, source_lengths)
        target_encodings, target_lengths = self.predictor(targets, target_lengths)
        return self.joiner(source_encodings, source_lengths, target_encodings, target_lengths)


num_symbols, blank, feat_dim, enc_dim = 6, 5, 8, 16
model = RNNT(_Transcriber(feat_dim, enc_dim), _Predictor(num_symbols, enc_dim), _Joiner(enc_dim, num_symbols))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

B, T, U = 2, 5, 2
sources = torch.randn(B, T, feat_dim)
source_lengths = torch.tensor([5, 4], dtype=torch.int32)
targets = torch.tensor([[1, 3], [2, 2]], dtype=torch.int32)
target_lengths = torch.tensor([2, 2], dtype=torch.int32)
predictor_input = torch.cat([torch.full((B, 1), blank, dtype=torch.long), targets.long()], dim=1)

for step in range(3):
    optimizer.zero_grad()
    logits, logit_lengths, _ = model(sources, source_lengths, predictor_input, target_lengths + 1)
    log_probs = F.log_softmax(logits, dim=-1)
    loss = rnnt_loss(log_probs, targets, logit_lengths, target_lengths, blank=blank, fused_log_softmax=False)
    loss.backward()
    optimizer.step()
    print(f"step {step}: rnnt loss {loss.item():.4f}")

print("joiner.linear.weight.grad norm:", model.joiner.linear.weight.grad.norm().item())
