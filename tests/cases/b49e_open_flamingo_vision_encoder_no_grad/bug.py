# Report: mlfoundations/open_flamingo issue #253
#   "How to finetune all paramaters, including vision_encoder and original decoder layers?"
#   https://github.com/mlfoundations/open_flamingo/issues/253
# What went wrong: to fine-tune everything the user called model.requires_grad_(True),
#   but after backward the vision_encoder parameters (e.g. ln_post.weight) had
#   requires_grad=True and grad None. Flamingo._encode_vision_x runs the CLIP vision
#   encoder inside `with torch.no_grad():`, so the visual features reaching the
#   perceiver carry no graph back into the encoder.
# Fix (maintainer, anas-awadalla): "This is because of this line [flamingo.py#L194,
#   the `with torch.no_grad():`]. If you remove that it should work fine."
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- open_clip-style VisionTransformer (tiny), returns (pooled, tokens) ----
class VisionTransformer(nn.Module):
    def __init__(self, image_size=16, patch_size=4, width=32, layers=2, heads=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width ** -0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn((image_size // patch_size) ** 2 + 1, width))
        self.ln_pre = nn.LayerNorm(width)
        self.transformer = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(width, heads, width * 4, dropout=0.0, batch_first=True), layers)
        self.output_tokens = True

    def forward(self, x):
        x = self.conv1(x)                                   # (N, width, g, g)
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
        cls = self.class_embedding.expand(x.shape[0], 1, -1)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding
        x = self.ln_pre(x)
        x = self.transformer(x)
        pooled, tokens = x[:, 0], x[:, 1:]
        if self.output_tokens:
            return pooled, tokens
        return pooled


# ---- helpers.py ----
class PerceiverAttention(nn.Module):
    def __init__(self, *, dim, dim_head=8, heads=4):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        inner_dim = dim_head * heads
        self.norm_media = nn.LayerNorm(dim)
        self.norm_latents = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)

    def forward(self, x, latents):
        # x: (b, T, n1, D), latents: (b, T, n2, D)
        x = self.norm_media(x)
        latents = self.norm_latents(latents)
        q = self.to_q(latents)
        kv_input = torch.cat((x, latents), dim=-2)
        k, v = self.to_kv(kv_input).chunk(2, dim=-1)
        b, T = q.shape[:2]
        q, k, v = [t.reshape(b, T, t.shape[2], self.heads, -1).transpose(2, 3) for t in (q, k, v)]
        sim = (q * self.scale) @ k.transpose(-1, -2)
        attn = (sim - sim.amax(dim=-1, keepdim=True).detach()).softmax(dim=-1)
        out = (attn @ v).transpose(2, 3).reshape(b, T, latents.shape[2], -1)
        return self.to_out(out)


class PerceiverResampler(nn.Module):
    def __init__(self, *, dim, depth=2, num_latents=4, max_num_media=4):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.media_time_embs = nn.Parameter(torch.randn(max_num_media, 1, dim))
        self.layers = nn.ModuleList([
            nn.ModuleList([PerceiverAttention(dim=dim),
                           nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2, bias=False),
                                         nn.GELU(), nn.Linear(dim * 2, dim, bias=False))])
            for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        # x: (b, T, F, v, D)
        b, T, F_, v = x.shape[:4]
        x = x + self.media_time_embs[:T].unsqueeze(2)           # add time embeddings
        x = x.reshape(b, T, F_ * v, x.shape[-1])                 # "b T F v d -> b T (F v) d"
        latents = self.latents.expand(b, T, -1, -1)
        for attn, ff in self.layers:
            latents = attn(x, latents) + latents
            latents = ff(latents) + latents
        return self.norm(latents)


class MaskedCrossAttention(nn.Module):
    def __init__(self, *, dim, dim_visual, dim_head=8, heads=4):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        inner_dim = dim_head * heads
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim_visual, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)

    def forward(self, x, media):
        b, n, _ = x.shape
        x = self.norm(x)
        q = self.to_q(x)
        media = media.reshape(b, -1, media.shape[-1])            # "b t n d -> b (t n) d"
        k, v = self.to_kv(media).chunk(2, dim=-1)
        q, k, v = [t.reshape(b, t.shape[1], self.heads, -1).transpose(1, 2) for t in (q, k, v)]
        attn = ((q * self.scale) @ k.transpose(-1, -2)).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class GatedCrossAttentionBlock(nn.Module):
    def __init__(self, *, dim, dim_visual):
        super().__init__()
        self.attn = MaskedCrossAttention(dim=dim, dim_visual=dim_visual)
        self.attn_gate = nn.Parameter(torch.tensor([0.0]))
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2, bias=False),
                                nn.GELU(), nn.Linear(dim * 2, dim, bias=False))
        self.ff_gate = nn.Parameter(torch.tensor([0.0]))

    def forward(self, x, media):
        x = self.attn(x, media) * self.attn_gate.tanh() + x
        x = self.ff(x) * self.ff_gate.tanh() + x
        return x


# ---- flamingo_lm.py ----
class FlamingoLayer(nn.Module):
    def __init__(self, gated_cross_attn_layer, decoder_layer):
        super().__init__()
        self.gated_cross_attn_layer = gated_cross_attn_layer
        self.decoder_layer = decoder_layer
        self.vis_x = None

    def condition_vis_x(self, vis_x):
        self.vis_x = vis_x

    def forward(self, lang_x):
        if self.gated_cross_attn_layer is not None:
            lang_x = self.gated_cross_attn_layer(lang_x, self.vis_x)
        return self.decoder_layer(lang_x)


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=40, dim=32, n_layers=2, vis_dim=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.gated_cross_attn_layers = nn.ModuleList(
            [GatedCrossAttentionBlock(dim=dim, dim_visual=vis_dim) for _ in range(n_layers)])
        self.old_decoder_blocks = nn.ModuleList(
            [nn.TransformerEncoderLayer(dim, 4, dim * 2, dropout=0.0, batch_first=True) for _ in range(n_layers)])
        self.decoder_layers = nn.ModuleList(
            [FlamingoLayer(g, d) for g, d in zip(self.gated_cross_attn_layers, self.old_decoder_blocks)])
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def _get_decoder_layers(self):
        return self.decoder_layers

    def clear_conditioned_layers(self):
        for layer in self.decoder_layers:
            layer.condition_vis_x(None)

    def forward(self, input_ids, labels=None):
        h = self.embed_tokens(input_ids)
        for layer in self.decoder_layers:
            h = layer(h)
        logits = self.lm_head(h)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return loss, logits


# ---- flamingo.py ----
class Flamingo(nn.Module):
    def __init__(self, vision_encoder, lang_encoder, vis_dim):
        super().__init__()
        self.vis_dim = vis_dim
        self.vision_encoder = vision_encoder
        self.perceiver = PerceiverResampler(dim=self.vis_dim)
        self.lang_encoder = lang_encoder

    def forward(self, vision_x, lang_x, labels=None):
        self._encode_vision_x(vision_x=vision_x)
        output = self.lang_encoder(lang_x, labels=labels)
        self.lang_encoder.clear_conditioned_layers()
        return output

    def _encode_vision_x(self, vision_x):
        assert vision_x.ndim == 6, "vision_x should be of shape (b, T_img, F, C, H, W)"
        b, T, F_ = vision_x.shape[:3]
        assert F_ == 1, "Only single frame supported"

        vision_x = vision_x.reshape(b * T * F_, *vision_x.shape[3:])   # "b T F c h w -> (b T F) c h w"
        with torch.no_grad():  # <- no_grad
            vision_x = self.vision_encoder(vision_x)[1]
        vision_x = vision_x.reshape(b, T, F_, *vision_x.shape[1:])     # "(b T F) v d -> b T F v d"
        vision_x = self.perceiver(vision_x)  # reshapes to (b, T, n, d)

        for layer in self.lang_encoder._get_decoder_layers():
            layer.condition_vis_x(vision_x)


if __name__ == '__main__':
    model = Flamingo(VisionTransformer(), TinyCausalLM(), vis_dim=32)
    # the reporter: fine-tune ALL parameters
    model.requires_grad_(True)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    vision_x = torch.randn(2, 1, 1, 3, 16, 16)
    lang_x = torch.randint(0, 40, (2, 10))
    for step in range(3):
        loss, _ = model(vision_x, lang_x, labels=lang_x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print('step', step, 'loss', round(loss.item(), 4))

    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    print('requires_grad=True but grad None:', missing)
    print('vision_encoder.conv1.weight.grad:', model.vision_encoder.conv1.weight.grad)
