"""VeOmni PR #1017, https://github.com/ByteDance-Seed/VeOmni/pull/1017: the chunked fused-linear
`_ChunkedLinearLogProbs` autograd.Function (per-token log-probs for PPO/GRPO without materialising logits)
silently drops the gradient of the model trunk. forward() runs with grad mode off; the causal shift
`hidden_states[..., :-1, :]` makes the input non-contiguous, so `reshape(-1, H)` inside forward copies it and the
copy has requires_grad=False. backward() decided whether to compute dhidden from that saved copy's flag, so it
returned None for hidden_states: lm_head.weight kept training while every trunk parameter got no gradient.
Fix (the PR): gate the allocation on ctx.needs_input_grad, which reflects the Function's real inputs.
Shrunk to a tiny embedding+MLP policy, one chunk size, a REINFORCE-style loss on random tokens."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class _ChunkedLinearLogProbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden_states, weight, labels, chunk_size):
        orig_hidden_shape = hidden_states.shape
        h_2d = hidden_states.reshape(-1, hidden_states.size(-1))
        l_1d = labels.reshape(-1)
        T = l_1d.shape[0]
        log_probs = torch.zeros(T, dtype=torch.float32)
        for s in range(0, T, chunk_size):
            logits = (h_2d[s:s + chunk_size] @ weight.t()).float()
            log_probs[s:s + chunk_size] = logits.log_softmax(-1).gather(-1, l_1d[s:s + chunk_size, None]).squeeze(-1)
        ctx.save_for_backward(h_2d, weight, l_1d)
        ctx.chunk_size = chunk_size
        ctx.orig_hidden_shape = orig_hidden_shape
        return log_probs.view(labels.shape)

    @staticmethod
    def backward(ctx, dlog_probs):
        h_2d, weight, l_1d = ctx.saved_tensors
        T = l_1d.shape[0]
        dlp = dlog_probs.reshape(-1).float()
        dhidden = torch.zeros_like(h_2d) if ctx.needs_input_grad[0] else None
        dweight = torch.zeros_like(weight) if ctx.needs_input_grad[1] else None
        for s in range(0, T, ctx.chunk_size):
            h_chunk, l_chunk = h_2d[s:s + ctx.chunk_size], l_1d[s:s + ctx.chunk_size]
            probs = (h_chunk @ weight.t()).float().softmax(-1)
            one_hot = torch.zeros_like(probs).scatter_(-1, l_chunk[:, None], 1.0)
            dlogits = dlp[s:s + ctx.chunk_size, None] * (one_hot - probs)
            if dhidden is not None:
                dhidden[s:s + ctx.chunk_size] = dlogits @ weight
            if dweight is not None:
                dweight += dlogits.t() @ h_chunk
        if dhidden is not None:
            dhidden = dhidden.view(ctx.orig_hidden_shape)
        return dhidden, dweight, None, None


def chunk_logprobs_function(hidden_states, weights, labels, chunk_size=8):
    # causal shift: predict token t+1 from position t (a non-contiguous slice of hidden_states)
    return _ChunkedLinearLogProbs.apply(hidden_states[..., :-1, :], weights, labels[..., 1:], chunk_size)


class TinyPolicy(nn.Module):
    def __init__(self, vocab=32, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.trunk = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, hidden))
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        hidden_states = self.trunk(self.embed(input_ids))
        return chunk_logprobs_function(hidden_states, self.lm_head.weight, input_ids)


model = TinyPolicy()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
trunk_before = model.trunk[0].weight.detach().clone()
for step in range(5):
    input_ids = torch.randint(0, 32, (4, 12))
    advantages = torch.randn(4, 1)
    log_probs = model(input_ids)
    loss = -(advantages * log_probs).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("lm_head.weight grad is None:", model.lm_head.weight.grad is None)
print("trunk[0].weight grad is None:", model.trunk[0].weight.grad is None)
print("embed.weight grad is None:", model.embed.weight.grad is None)
print("trunk[0].weight changed:", not torch.equal(trunk_before, model.trunk[0].weight))
