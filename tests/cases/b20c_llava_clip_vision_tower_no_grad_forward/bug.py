"""LLaVA (haotian-liu/LLaVA#1449, https://github.com/haotian-liu/LLaVA/issues/1449): the reporter unfreezes the
CLIP ViT vision tower (requires_grad = True on its parameters) to fine-tune it with the LLM, but after
loss.backward() every vision-tower .grad is still None and its weights never change; only mm_projector learns.
Why: llava/model/multimodal_encoder/clip_encoder.py decorates CLIPVisionTower.forward with @torch.no_grad(), so
the image features are computed without a graph, whatever requires_grad says.
Fix (the reporter's, confirmed by a second user): delete the @torch.no_grad() decorator of forward."""
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class CLIPVisionModel(nn.Module):
    """transformers' CLIPVisionModel in short: patch embedding, class token, encoder layers, hidden_states."""

    def __init__(self, hidden_size=16, patch_size=4):
        super().__init__()
        self.patch_embedding = nn.Conv2d(3, hidden_size, patch_size, patch_size, bias=False)
        self.class_embedding = nn.Parameter(torch.randn(hidden_size))
        self.layers = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(2)])

    def forward(self, pixel_values, output_hidden_states=False):
        x = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_embedding.expand(x.shape[0], 1, -1), x], dim=1)
        hidden_states = (x,)
        for layer in self.layers:
            x = x + torch.tanh(layer(x + x.mean(dim=1, keepdim=True)))  # tokens mix, as attention does
            hidden_states += (x,)
        return SimpleNamespace(last_hidden_state=x, hidden_states=hidden_states)


class CLIPVisionTower(nn.Module):
    def __init__(self, vision_tower, args):
        super().__init__()
        self.vision_tower_name = vision_tower
        self.select_layer = args.mm_vision_select_layer
        self.select_feature = getattr(args, 'mm_vision_select_feature', 'patch')
        self.load_model()

    def load_model(self):
        self.vision_tower = CLIPVisionModel()
        self.vision_tower.requires_grad_(False)

    def feature_select(self, image_forward_outs):
        image_features = image_forward_outs.hidden_states[self.select_layer]
        if self.select_feature == 'patch':
            image_features = image_features[:, 1:]
        return image_features

    @torch.no_grad()  # <- no_grad
    def forward(self, images):
        image_forward_outs = self.vision_tower(images.to(dtype=self.dtype), output_hidden_states=True)
        image_features = self.feature_select(image_forward_outs).to(images.dtype)
        return image_features

    @property
    def dtype(self):
        return self.vision_tower.patch_embedding.weight.dtype


class LlavaLlamaForCausalLM(nn.Module):
    """LLaVA in short: vision tower -> mm_projector -> image tokens prepended to the text embeddings -> LM."""

    def __init__(self, args, vocab=32, dim=24):
        super().__init__()
        self.vision_tower = CLIPVisionTower('openai/clip-vit-large-patch14', args)
        self.mm_projector = nn.Linear(16, dim)
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def get_vision_tower(self):
        return self.vision_tower

    def encode_images(self, images):
        image_features = self.get_vision_tower()(images)
        return self.mm_projector(image_features)

    def forward(self, input_ids, images, labels):
        image_features = self.encode_images(images)
        inputs_embeds = torch.cat([image_features, self.embed_tokens(input_ids)], dim=1)
        logits = self.lm_head(inputs_embeds)[:, image_features.shape[1] - 1:-1]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


torch.manual_seed(0)
args = SimpleNamespace(mm_vision_select_layer=-1, mm_vision_select_feature='patch')
model = LlavaLlamaForCausalLM(args)
for p in model.get_vision_tower().parameters():  # the reporter: unfreeze the ViT
    p.requires_grad = True
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
before = model.get_vision_tower().vision_tower.patch_embedding.weight.detach().clone()
for step in range(3):
    images = torch.randn(2, 3, 8, 8)
    input_ids = torch.randint(0, 32, (2, 5))
    loss = model(input_ids, images, labels=input_ids)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
vit = model.get_vision_tower().vision_tower
print("vit patch_embedding grad:", None if vit.patch_embedding.weight.grad is None else "set")
print("mm_projector grad:", None if model.mm_projector.weight.grad is None else "set")
print("vit weights changed:", not torch.equal(before, vit.patch_embedding.weight))
