"""Qwen-VL fine-tuning with only the visual tower trainable (QwenLM/Qwen-VL#124): the LLM and lm_head are frozen via
requires_grad, the ViT + resampler are left trainable. To dodge an earlier in-place error (#120), the image features
are written into the text embeddings through .data, so the copy is invisible to autograd: the loss has no path back to
the ViT and backward raises "element 0 of tensors does not require grad and does not have a grad_fn"."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE_START_ID, IMAGE_END_ID, IMAGE_PAD_ID = 40, 41, 42


class Resampler(nn.Module):
    def __init__(self, n_queries, embed_dim, kv_dim, num_heads):
        super().__init__()
        self.query = nn.Parameter(torch.randn(n_queries, embed_dim) * 0.02)
        self.kv_proj = nn.Linear(kv_dim, embed_dim, bias=False)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.ln_q = nn.LayerNorm(embed_dim)
        self.ln_kv = nn.LayerNorm(embed_dim)

    def forward(self, x):
        x = self.ln_kv(self.kv_proj(x)).permute(1, 0, 2)
        q = self.ln_q(self.query).unsqueeze(1).repeat(1, x.shape[1], 1)
        out = self.attn(q, x, x)[0]
        return out.permute(1, 0, 2)


class VisionTransformer(nn.Module):
    def __init__(self, width=16, patch=4, n_queries=4, output_dim=32):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch, stride=patch, bias=False)
        self.positional_embedding = nn.Parameter(torch.randn(4, width) * 0.02)
        self.ln_pre = nn.LayerNorm(width)
        self.resblock = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.attn_pool = Resampler(n_queries, output_dim, width, num_heads=4)
        self.ln_post = nn.LayerNorm(output_dim)
        self.proj = nn.Parameter(torch.randn(output_dim, output_dim) * output_dim ** -0.5)

    def forward(self, x):
        x = self.conv1(x).flatten(2).transpose(1, 2)
        x = self.ln_pre(x + self.positional_embedding)
        x = self.resblock(x)
        x = self.ln_post(self.attn_pool(x))
        return x @ self.proj


class QWenModel(nn.Module):
    def __init__(self, vocab=50, hidden=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([nn.TransformerEncoderLayer(hidden, 4, 2 * hidden, dropout=0.0, batch_first=True)])
        self.ln_f = nn.LayerNorm(hidden)
        self.visual = VisionTransformer(output_dim=hidden)

    def forward(self, input_ids, pixel_values):
        bos_pos = torch.where(input_ids == IMAGE_START_ID)
        eos_pos = torch.where(input_ids == IMAGE_END_ID)
        img_pos = torch.stack((bos_pos[0], bos_pos[1], eos_pos[1]), dim=1)
        images = self.visual(pixel_values)
        hidden_states = self.wte(input_ids)
        hidden_states = self.drop(hidden_states)
        for idx, (i, a, b) in enumerate(img_pos):
            hidden_states.data[i][a + 1 : b] = images.data[idx]  # <- data_attr
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.ln_f(hidden_states)


class QWenLMHeadModel(nn.Module):
    def __init__(self, vocab=50, hidden=32):
        super().__init__()
        self.transformer = QWenModel(vocab, hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, pixel_values, labels):
        logits = self.lm_head(self.transformer(input_ids, pixel_values))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


torch.manual_seed(0)
model = QWenLMHeadModel()
# fix_vit=False: train only the visual part, freeze the LLM and lm_head
model.requires_grad_(False)
model.transformer.visual.requires_grad_(True)
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)

text = torch.randint(0, 40, (2, 5))
image_tokens = torch.tensor([[IMAGE_START_ID] + [IMAGE_PAD_ID] * 4 + [IMAGE_END_ID]] * 2)
input_ids = torch.cat([text[:, :1], image_tokens, text[:, 1:]], dim=1)
pixel_values = torch.randn(2, 3, 8, 8)
for step in range(2):
    loss = model(input_ids, pixel_values, labels=input_ids)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("visual conv1 grad is None:", model.transformer.visual.conv1.weight.grad is None)
