"""APPFL DeCaF (federated CLIP + LoRA), review comment on https://github.com/APPFL/APPFL/pull/398: DeCaFTrainer
freezes every non-LoRA parameter, builds AdamW over the parameters that still require grad (LoRA on both towers),
and with encoder="both" re-encodes the class prompts every step through _encode_text(). That helper wraps the
text-encoder forward in an unconditional `with torch.no_grad():` (it is shared with the frozen/validation path), so
the text features carry no graph and the text-side LoRA matrices never receive a gradient: "the run completes, but
half the adapters silently never train". Fix: disable gradients there only when the text tower is not trained."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0); torch.set_num_threads(1)


class LoRALinear(nn.Module):
    def __init__(self, d_in, d_out, r=4):
        super().__init__()
        self.base = nn.Linear(d_in, d_out)
        self.w_lora_A = nn.Parameter(torch.randn(r, d_in) * 0.1)
        self.w_lora_B = nn.Parameter(torch.zeros(d_out, r))

    def forward(self, x):
        return self.base(x) + x @ self.w_lora_A.t() @ self.w_lora_B.t()


class TinyCLIP(nn.Module):
    def __init__(self, vocab=50, d=32, img_dim=48):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, d)
        self.text_proj = LoRALinear(d, d)
        self.visual = LoRALinear(img_dim, d)

    def encode_text(self, tokens):
        return self.text_proj(self.token_embedding(tokens).mean(dim=1))

    def encode_image(self, images):
        return self.visual(images)


class DeCaFTrainer:
    def __init__(self, model, encoder="both"):
        self.model = model
        self.encoder = encoder

    def _freeze_non_lora(self):
        for name, param in self.model.named_parameters():
            param.requires_grad = "lora_" in name

    def _encode_text(self, class_tokens):
        with torch.no_grad():  # <- no_grad
            class_embeddings = self.model.encode_text(class_tokens)
        return class_embeddings / class_embeddings.norm(dim=-1, keepdim=True)

    def train(self, images_all, targets_all, class_tokens, n_steps=5, logit_scale=10.0):
        self._freeze_non_lora()
        lora_params = [p for p in self.model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(lora_params, lr=1e-2, weight_decay=0.0)
        for step in range(n_steps):
            images, targets = images_all[step], targets_all[step]
            optimizer.zero_grad()
            if self.encoder in ("text", "both"):
                text_features = self._encode_text(class_tokens)
            image_features = self.model.encode_image(images)
            image_features = image_features / image_features.norm(dim=-1, keepdim=True)
            cosine_sim = logit_scale * image_features @ text_features.t()
            loss = F.cross_entropy(cosine_sim, targets)
            loss.backward()
            optimizer.step()
        return loss.item()


model = TinyCLIP()
class_tokens = torch.randint(0, 50, (4, 6))  # 4 class prompts, 6 tokens each
images_all = torch.randn(5, 8, 48)
targets_all = torch.randint(0, 4, (5, 8))
text_B_before = model.text_proj.w_lora_B.detach().clone()
vis_B_before = model.visual.w_lora_B.detach().clone()

trainer = DeCaFTrainer(model, encoder="both")
print("final loss:", round(trainer.train(images_all, targets_all, class_tokens), 4))
print("text  w_lora_B.grad is None:", model.text_proj.w_lora_B.grad is None)
print("text  LoRA changed:", not torch.equal(text_B_before, model.text_proj.w_lora_B))
print("vision LoRA changed:", not torch.equal(vis_B_before, model.visual.w_lora_B))
