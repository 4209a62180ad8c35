import torch

torch.manual_seed(0)


def masked_log_softmax(vector, mask):
    if mask is not None:
        vector = vector + mask.float().log()  # <- nan
    return torch.nn.functional.log_softmax(vector, dim=1)


scorer = torch.nn.Linear(4, 1)
tokens = torch.randn(2, 6, 4)
mask = torch.ones(2, 6)
mask[1] = 0
logits = scorer(tokens).squeeze(-1)
log_probs = masked_log_softmax(logits, mask)
loss = -log_probs[:, 0].mean()
loss.backward()
print(log_probs)
