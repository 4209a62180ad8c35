"""huggingface/peft PR #1372, "Fix for 'leaf Variable that requires grad' Error in In-Place Operation",
https://github.com/huggingface/peft/pull/1372 (the same error reported in huggingface/peft#1553: LoRA on an
embedding layer with bitsandbytes / mixed-precision k-bit training).

LoRA's Embedding layer adds the low-rank update into the base embedding's output in place:
`result += (after_A @ embedding_B) * scaling`. For k-bit training the model is first prepared with
`enable_input_require_grads()`, a forward hook on the input embedding that calls `output.requires_grad_(True)`;
the base embedding is frozen, so its output has no grad_fn and the hook turns it into a leaf that requires grad.
The in-place `+=` into that leaf raises "a leaf Variable that requires grad is being used in an in-place
operation" on the first forward, and the LoRA matrices never train. The PR: `result = result + ...`.
A tiny causal LM written in plain torch stands in for the reporter's model.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
vocab, d = 40, 16


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.mlp = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        return self.lm_head(h + self.mlp(h))


class LoraEmbedding(nn.Module):
    def __init__(self, base_layer, r=4, lora_alpha=8):
        super().__init__()
        self.base_layer = base_layer
        self.lora_embedding_A = nn.Parameter(torch.zeros(r, base_layer.num_embeddings))
        self.lora_embedding_B = nn.Parameter(torch.randn(base_layer.embedding_dim, r))
        self.scaling = lora_alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        embedding_A = self.lora_embedding_A.T
        embedding_B = self.lora_embedding_B.T
        after_A = F.embedding(x, embedding_A)
        result += (after_A @ embedding_B) * self.scaling  # <- autograd_error
        return result


model = TinyLM()
# prepare_model_for_kbit_training: freeze the base model, make the embedding output require grad
for p in model.parameters():
    p.requires_grad = False
model.embed_tokens.register_forward_hook(lambda module, input, output: output.requires_grad_(True))
# get_peft_model with target_modules=["embed_tokens"]
model.embed_tokens = LoraEmbedding(model.embed_tokens)

optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
A_before = model.embed_tokens.lora_embedding_A.detach().clone()
data = torch.randint(0, vocab, (8, 12))
for step in range(5):
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), data[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
print("lora_embedding_A changed:", not torch.equal(A_before, model.embed_tokens.lora_embedding_A))
