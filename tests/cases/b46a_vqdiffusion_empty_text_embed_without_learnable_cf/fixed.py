# microsoft/VQ-Diffusion#6: DiffusionTransformer always creates `empty_text_embed`, the learned null text
# embedding for learnable classifier-free guidance, but forward only substitutes it for empty captions
# when `learnable_cf` is on. Training with learnable_cf=False (the COCO config) leaves the Parameter in
# model.parameters() and the optimizer, and it never receives a gradient (DDP: "parameters that were
# not used in producing loss").
# Fixed: the null text embedding is created only when learnable_cf is on (the maintainer's fix).
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
SEQ_TEXT, TEXT_DIM, NUM_CLASSES, CONTENT_LEN = 8, 16, 33, 12  # last class is the [MASK] token


class CLIPTextEmbedding(nn.Module):
    """Stand-in for the frozen CLIP text encoder used as condition_emb."""

    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(50, TEXT_DIM)
        self.proj = nn.Linear(TEXT_DIM, TEXT_DIM)
        self.requires_grad_(False)
        self.embed_dim = TEXT_DIM

    def forward(self, tokens):
        return self.proj(self.token_embedding(tokens))


class Text2ImageTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.content_emb = nn.Embedding(NUM_CLASSES, TEXT_DIM)
        self.time_emb = nn.Embedding(10, TEXT_DIM)
        self.cross = nn.MultiheadAttention(TEXT_DIM, 2, batch_first=True)
        self.to_logits = nn.Linear(TEXT_DIM, NUM_CLASSES - 1)

    def forward(self, x_t, cond_emb, t):
        h = self.content_emb(x_t) + self.time_emb(t)[:, None]
        h = h + self.cross(h, cond_emb, cond_emb)[0]
        return self.to_logits(h).transpose(1, 2)  # B x (classes-1) x L


class DiffusionTransformer(nn.Module):
    def __init__(self, diffusion_step=10, learnable_cf=False):
        super().__init__()
        self.condition_emb = CLIPTextEmbedding()
        self.transformer = Text2ImageTransformer()
        self.num_timesteps = diffusion_step
        if learnable_cf:
            self.empty_text_embed = torch.nn.Parameter(torch.randn(size=(SEQ_TEXT, TEXT_DIM), requires_grad=True, dtype=torch.float64))
        self.learnable_cf = learnable_cf

    def _train_loss(self, x_start, cond_emb):
        b = x_start.shape[0]
        t = torch.randint(0, self.num_timesteps, (b,))
        mask = torch.rand(x_start.shape) < (t[:, None] + 1) / self.num_timesteps
        x_t = torch.where(mask, torch.full_like(x_start, NUM_CLASSES - 1), x_start)
        logits = self.transformer(x_t, cond_emb, t)
        return (F.cross_entropy(logits, x_start, reduction="none") * mask).sum() / mask.sum().clamp(min=1)

    def forward(self, input):
        with torch.no_grad():
            cond_emb = self.condition_emb(input["condition_token"])  # B x Ld x D
        if self.learnable_cf:
            is_empty_text = torch.logical_not(input["condition_mask"][:, 2]).unsqueeze(1).unsqueeze(2).repeat(1, SEQ_TEXT, TEXT_DIM)
            cond_emb = torch.where(is_empty_text, self.empty_text_embed.unsqueeze(0).repeat(cond_emb.shape[0], 1, 1), cond_emb.type_as(self.empty_text_embed))
        cond_emb = cond_emb.float()
        return {"loss": self._train_loss(input["content_token"], cond_emb)}


model = DiffusionTransformer(learnable_cf=False)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

for step in range(3):
    condition_token = torch.randint(0, 50, (4, SEQ_TEXT))
    batch = {"condition_token": condition_token, "condition_mask": condition_token > 0,
             "content_token": torch.randint(0, NUM_CLASSES - 1, (4, CONTENT_LEN))}
    loss = model(batch)["loss"]
    optimizer.zero_grad()
    loss.backward()
    unused = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    print(f"step {step} loss {loss.item():.4f} parameters that were not used in producing loss: {unused}")
    optimizer.step()
