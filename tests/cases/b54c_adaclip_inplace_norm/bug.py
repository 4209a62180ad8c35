# Report: caoyunkang/AdaCLIP issue #2 "cause error when try to train", fixed by PR #46 "Update adaclip.py"
#   https://github.com/caoyunkang/AdaCLIP/issues/2   https://github.com/caoyunkang/AdaCLIP/pull/46
# What went wrong: training AdaCLIP (CLIP with learnable visual prompts + projection heads for zero-shot
#   anomaly detection) on a recent torch fails in loss.backward() with "one of the variables needed for
#   gradient computation has been modified by an inplace operation: [torch.cuda.HalfTensor [1, 768]], which is
#   output 0 of DivBackward0, is at version 1". AdaCLIP.proj_visual_tokens L2-normalises the projected tokens
#   in place (`x /= x.norm(...)`), overwriting the tensor that norm() saved for its backward.
# Fix (PR #46): make the normalisation out-of-place (`x = x / x.norm(...)`).
# Tiny random CLIP built from a config, CPU, float32 (the original runs under autocast/half).
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, q_x, k_x=None, v_x=None, attn_mask=None):
        y = self.ln_1(q_x)
        a, attn = self.attn(y, y, y, need_weights=True, attn_mask=attn_mask)
        x = q_x + a
        x = x + self.mlp(self.ln_2(x))
        return x, attn


class Transformer(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.resblocks = nn.ModuleList([ResidualAttentionBlock(d) for _ in range(layers)])


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, width, layers, output_dim):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, patch_size, patch_size, bias=False)
        self.class_embedding = nn.Parameter(torch.randn(width) * 0.02)
        self.positional_embedding = nn.Parameter(torch.randn((image_size // patch_size) ** 2 + 1, width) * 0.02)
        self.ln_pre = nn.LayerNorm(width)
        self.transformer = Transformer(width, layers)
        self.ln_post = nn.LayerNorm(width)
        self.proj = nn.Parameter(torch.randn(width, output_dim) * width ** -0.5)


class CLIP(nn.Module):
    def __init__(self, embed_dim=16, image_size=32, patch_size=8, vision_width=24, vision_layers=4,
                 vocab_size=50, context_length=8, text_width=16):
        super().__init__()
        self.visual = VisionTransformer(image_size, patch_size, vision_width, vision_layers, embed_dim)
        self.token_embedding = nn.Embedding(vocab_size, text_width)
        self.text_projection = nn.Parameter(torch.randn(text_width, embed_dim) * text_width ** -0.5)

    def encode_text(self, text):
        x = self.token_embedding(text).mean(dim=1)
        return x @ self.text_projection


class ProjectLayer(nn.Module):
    def __init__(self, input_dim, output_dim, num_replicas, stack=False, is_array=True):
        super(ProjectLayer, self).__init__()
        self.head = nn.ModuleList([nn.Linear(input_dim, output_dim) for _ in range(num_replicas)])
        self.num_replicas = num_replicas
        self.stack = stack
        self.is_array = is_array

    def forward(self, tokens):
        out_tokens = []
        for i in range(self.num_replicas):
            if self.is_array:
                temp = self.head[i](tokens[i][:, 1:, :])  # patch tokens only
            else:
                temp = self.head[i](tokens)
            out_tokens.append(temp)
        if self.stack:
            out_tokens = torch.stack(out_tokens, dim=1)
        return out_tokens


class PromptLayer(nn.Module):
    def __init__(self, channel, length, depth, is_text, prompting_type, enabled=True):
        super(PromptLayer, self).__init__()
        self.channel, self.length, self.depth = channel, length, depth
        self.is_text, self.enabled, self.prompting_type = is_text, enabled, prompting_type
        if self.enabled and 'S' in prompting_type:  # static learnable prompts
            self.static_prompts = nn.ParameterList(
                [nn.Parameter(torch.empty(self.length, self.channel)) for _ in range(self.depth)])
            for single_para in self.static_prompts:
                nn.init.normal_(single_para, std=0.02)

    def forward_visual(self, resblock, indx, x, k_x=None, v_x=None, attn_mask=None):
        length = self.length
        if indx < self.depth:
            visual_context = self.static_prompts[indx].unsqueeze(0).expand(x.shape[1], -1, -1)
        if indx == 0:
            visual_context = visual_context.permute(1, 0, 2)
            x = torch.cat([x, visual_context], dim=0)
        elif indx < self.depth:  # replace with learnable tokens
            prefix = x[0:x.shape[0] - length, :, :]
            visual_context = visual_context.permute(1, 0, 2)
            x = torch.cat([prefix, visual_context], dim=0)
        x, attn_tmp = resblock(q_x=x, k_x=k_x, v_x=v_x, attn_mask=attn_mask)
        tokens = x[:x.shape[0] - length, :, :]
        return x, tokens, attn_tmp

    def forward(self, resblock, indx, x, k_x=None, v_x=None, attn_mask=None):
        return self.forward_visual(resblock, indx, x, k_x, v_x, attn_mask)


class TextEmbebddingLayer(nn.Module):
    def __init__(self, fixed):
        super(TextEmbebddingLayer, self).__init__()
        self.fixed = fixed
        self.ensemble_text_features = {}
        self.n_prompts = 4

    def forward(self, model, texts, device):
        text_feature_list = []
        for text in texts:
            if self.ensemble_text_features.get(text) is None:
                self.ensemble_text_features[text] = self.encode_text(model, text, device)
            text_feature_list.append(self.ensemble_text_features[text])
        text_features = torch.stack(text_feature_list, dim=0)
        return F.normalize(text_features, dim=1)

    def encode_text(self, model, text, device):
        text_features = []
        for i in range(2):  # normal / abnormal states
            g = torch.Generator().manual_seed(i)
            prompted_sentence = torch.randint(0, 50, (self.n_prompts, 8), generator=g).to(device)  # stands in for tokenize()
            class_embeddings = model.freeze_clip.encode_text(prompted_sentence)
            class_embeddings /= class_embeddings.norm(dim=-1, keepdim=True)  # text branch runs under no_grad
            class_embedding = class_embeddings.mean(dim=0)
            class_embedding /= class_embedding.norm()
            text_features.append(class_embedding)
        return torch.stack(text_features, dim=1)


class AdaCLIP(nn.Module):
    def __init__(self, freeze_clip, text_channel, visual_channel, prompting_length, prompting_depth,
                 prompting_branch, prompting_type, output_layers, device, image_size):
        super(AdaCLIP, self).__init__()
        self.freeze_clip = freeze_clip
        self.visual = self.freeze_clip.visual
        self.output_layers = output_layers
        self.prompting_length = prompting_length
        self.enable_text_prompt = 'L' in prompting_branch
        self.enable_visual_prompt = 'V' in prompting_branch
        self.text_embedding_layer = TextEmbebddingLayer(fixed=(not self.enable_text_prompt))
        self.visual_prompter = PromptLayer(visual_channel, prompting_length, prompting_depth, is_text=False,
                                           prompting_type=prompting_type, enabled=self.enable_visual_prompt)
        self.patch_token_layer = ProjectLayer(visual_channel, text_channel, len(output_layers), stack=False, is_array=True)
        self.cls_token_layer = ProjectLayer(text_channel, text_channel, 1, stack=False, is_array=False)
        self.image_size = image_size
        self.device = device

    def encode_image(self, image):
        x = self.visual.conv1(image)
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
        x = torch.cat([self.visual.class_embedding.to(x.dtype) +
                       torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype, device=x.device), x], dim=1)
        x = x + self.visual.positional_embedding.to(x.dtype)
        x = self.visual.ln_pre(x)
        x = x.permute(1, 0, 2)  # NLD -> LND
        patch_tokens = []
        for indx, r in enumerate(self.visual.transformer.resblocks):
            x, tokens, attn_tmp = self.visual_prompter(r, indx, x, k_x=None, v_x=None, attn_mask=None)
            if (indx + 1) in self.output_layers:
                patch_tokens.append(tokens)
        x = x.permute(1, 0, 2)
        patch_tokens = [patch_tokens[t].permute(1, 0, 2) for t in range(len(patch_tokens))]
        pooled = self.visual.ln_post(x[:, 0])
        pooled = pooled @ self.visual.proj
        return pooled, patch_tokens, None

    def proj_visual_tokens(self, image_features, patch_tokens):
        # for patch tokens
        proj_patch_tokens = self.patch_token_layer(patch_tokens)
        for layer in range(len(proj_patch_tokens)):
            proj_patch_tokens[layer] = proj_patch_tokens[layer] / proj_patch_tokens[layer].norm(dim=-1, keepdim=True)
        # for cls tokens
        proj_cls_tokens = self.cls_token_layer(image_features)[0]
        proj_cls_tokens /= proj_cls_tokens.norm(dim=-1, keepdim=True)  # <- inplace_saved
        return proj_cls_tokens, proj_patch_tokens

    def visual_text_similarity(self, image_feature, patch_token, text_feature):
        anomaly_maps = []
        for layer in range(len(patch_token)):
            anomaly_maps.append(100.0 * patch_token[layer] @ text_feature)
        anomaly_score = (100.0 * image_feature.unsqueeze(1) @ text_feature).squeeze(1)
        anomaly_score = torch.softmax(anomaly_score, dim=1)
        for i in range(len(anomaly_maps)):
            B, L, C = anomaly_maps[i].shape
            H = int(L ** 0.5)
            anomaly_maps[i] = anomaly_maps[i].permute(0, 2, 1).reshape(B, 2, H, H)
            anomaly_maps[i] = F.interpolate(anomaly_maps[i], size=self.image_size, mode='bilinear', align_corners=True)
            anomaly_maps[i] = torch.softmax(anomaly_maps[i], dim=1)
        return anomaly_maps, anomaly_score

    def extract_feat(self, image, cls_name):
        image_features, patch_tokens, _ = self.encode_image(image)
        with torch.no_grad():
            text_features = self.text_embedding_layer(self, cls_name, self.device)
        proj_cls_tokens, proj_patch_tokens = self.proj_visual_tokens(image_features, patch_tokens)
        return proj_cls_tokens, proj_patch_tokens, text_features

    def forward(self, image, cls_name):
        image_features, patch_tokens, text_features = self.extract_feat(image, cls_name)
        return self.visual_text_similarity(image_features, patch_tokens, text_features)


clip = CLIP()
for p in clip.parameters():
    p.requires_grad_(False)  # freeze_clip
model = AdaCLIP(clip, text_channel=16, visual_channel=24, prompting_length=2, prompting_depth=3,
                prompting_branch='V', prompting_type='S', output_layers=[2, 4], device='cpu', image_size=32)
learnable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.Adam(learnable, lr=1e-3)

image = torch.randn(1, 3, 32, 32)
mask = (torch.rand(1, 32, 32) > 0.8).long()
label = torch.tensor([1])
cls_name = ['bottle']

anomaly_maps, anomaly_score = model(image, cls_name)
loss = sum(F.nll_loss(torch.log(m + 1e-8), mask) for m in anomaly_maps)
loss = loss + F.nll_loss(torch.log(anomaly_score + 1e-8), label)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("loss", loss.item(), "cls head grad norm", model.cls_token_layer.head[0].weight.grad.norm().item())
