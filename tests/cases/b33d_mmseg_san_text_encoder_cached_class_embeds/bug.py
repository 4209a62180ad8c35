"""mmsegmentation SAN with a trainable CLIP text encoder (https://github.com/open-mmlab/mmsegmentation/issues/3577):
the reporter wants the CLIPTextEncoder to take part in training, so removes `self._freeze()` and the
`@torch.no_grad()` on encode_text. Training then raises "Trying to backward through the graph a second time".
Why (read from mmseg/models/text_encoder/clip_text_encoder.py; the thread has no maintainer answer): the encoder is
built with cache_feature=True, so forward() encodes the dataset's class names once and stores the class embeddings in
self.cache; every later iteration reuses that cached tensor, whose graph through the text encoder the first
backward already freed. Fix: build the encoder with cache_feature=False when it is trained, so the class
embeddings are recomputed (with a fresh graph) every step."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0); torch.set_num_threads(1)


class CLIPTextEncoder(nn.Module):
    def __init__(self, vocabulary, vocab_size=64, embed_dims=16, output_dims=16, cache_feature=True):
        super().__init__()
        self.vocabulary = vocabulary
        self.token_embedding = nn.Embedding(vocab_size, embed_dims)
        self.transformer = nn.Sequential(nn.Linear(embed_dims, embed_dims), nn.GELU(), nn.Linear(embed_dims, embed_dims))
        self.ln_final = nn.LayerNorm(embed_dims)
        self.text_projection = nn.Parameter(torch.randn(embed_dims, output_dims) * embed_dims ** -0.5)
        self.bg_embed = nn.Parameter(torch.randn(1, output_dims) * output_dims ** -0.5)
        self.cache_feature = cache_feature
        if self.cache_feature:
            self.cache = {}
        # self._freeze()  -- removed by the reporter so the text encoder trains

    def encode_text(self, text, normalize=False):  # @torch.no_grad() removed by the reporter
        x = self.ln_final(self.transformer(self.token_embedding(text)))
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return F.normalize(x, dim=-1) if normalize else x

    def template_encode(self, vocabulary):
        tokens = torch.tensor([[1 + (7 * i + j) % 62 for j in range(5)] for i in range(len(vocabulary))])
        return self.encode_text(tokens, normalize=True)

    def forward(self):
        class_names = self.vocabulary
        if self.cache_feature:
            new_classes = [word for word in class_names if word not in self.cache]
            if len(new_classes) > 0:
                class_embeds = self.template_encode(new_classes)
                self.cache.update(dict(zip(new_classes, class_embeds)))
            class_embeds = torch.stack([self.cache[word] for word in class_names])
        else:
            class_embeds = self.template_encode(class_names)
        class_embeds = F.normalize(torch.cat([class_embeds, self.bg_embed]), p=2, dim=-1)
        return class_embeds


class SAN(nn.Module):
    def __init__(self, text_encoder, output_dims=16):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, output_dims, 1))
        self.text_encoder = text_encoder

    def forward(self, img):
        feats = F.normalize(self.backbone(img), dim=1)  # B, C, H, W
        class_embeds = self.text_encoder()  # K+1, C
        return 10.0 * torch.einsum("bchw,kc->bkhw", feats, class_embeds)


classes = ["road", "car", "tree"]
model = SAN(CLIPTextEncoder(classes, cache_feature=True))  # <- autograd_error
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
proj_before = model.text_encoder.text_projection.detach().clone()
for it in range(3):
    img = torch.randn(2, 3, 8, 8)
    gt = torch.randint(0, len(classes) + 1, (2, 8, 8))
    loss = F.cross_entropy(model(img), gt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
print("text_projection changed:", not torch.equal(proj_before, model.text_encoder.text_projection))
