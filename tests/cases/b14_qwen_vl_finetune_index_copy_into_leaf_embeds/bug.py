"""Qwen2.5-VL fine-tuning with QLoRA and gradient checkpointing (2U1/Qwen-VL-Series-Finetune#178): the frozen
embedding's output is turned into a leaf that requires grad by the input-require-grads hook gradient checkpointing
needs, and the monkey-patched forward scatters the image features into a view of it with
`flat.index_copy_(0, row_idx, img)`, which raises "a view of a leaf Variable that requires grad is being used in an
in-place operation". The PR: `flat = flat.index_copy(0, row_idx, img)` (out of place)."""
import torch
import torch.nn.functional as F
from torch import nn

vocab, d, image_token_id = 32, 16, 31


class LoRALinear(nn.Module):
    def __init__(self, d_in, d_out, r=4):
        super().__init__()
        self.base = nn.Linear(d_in, d_out).requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, d_in) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(d_out, r))

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.T @ self.lora_B.T


class QwenVL(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d).requires_grad_(False)
        self.visual_merger = nn.Linear(24, d)
        self.layer = LoRALinear(d, d)
        self.lm_head = nn.Linear(d, vocab).requires_grad_(False)
        self.embed_tokens.register_forward_hook(lambda module, inputs, output: output.requires_grad_(True))

    def forward(self, input_ids, pixel_values):
        inputs_embeds = self.embed_tokens(input_ids)
        img = self.visual_merger(pixel_values)
        flat = inputs_embeds.view(-1, d)
        row_idx = (input_ids.view(-1) == image_token_id).nonzero().squeeze(-1)
        flat.index_copy_(0, row_idx, img)  # <- autograd_error
        hidden = torch.utils.checkpoint.checkpoint(self.layer, flat.view_as(inputs_embeds), use_reentrant=True)
        return self.lm_head(hidden)


torch.manual_seed(0)
model = QwenVL()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for step in range(2):
    input_ids = torch.randint(0, vocab - 1, (2, 8))
    input_ids[:, 1:3] = image_token_id
    logits = model(input_ids, torch.randn(4, 24))
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), input_ids[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
