# Report: unslothai/unsloth issue #5039 "[Bug] Vision LoRA receives zero gradients on Gemma 4-26B-A4B-it",
#   fixed by unslothai/unsloth-zoo PR #596 "Fix lora grads for gemma4 vision"
#   https://github.com/unslothai/unsloth/issues/5039   https://github.com/unslothai/unsloth-zoo/pull/596
# What went wrong: LoRA on both vision and language layers with (reentrant) gradient checkpointing. Base weights
#   are frozen, so checkpointed blocks only build a graph if their input requires grad; unsloth's
#   requires_grad_for_gradient_checkpointing() adds a hook making the input embeddings require grad, but it picks
#   the tower from the FIRST trainable parameter only. Gemma4Model defines language_model before vision_tower, so
#   the hook lands on the language model and the vision tower's checkpointed blocks run with no graph: every vision
#   LoRA weight gets no gradient; only the language LoRA trains.
# Fix (unsloth-zoo PR #596): collect hook targets from ALL trainable parameters (one per tower), not just the first.
# Plain-torch stand-ins for the HF/PEFT classes; tiny config, CPU.
import re
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class LoraLinear(nn.Module):  # peft.tuners.lora.Linear
    def __init__(self, base_layer, r=4):
        super().__init__()
        self.base_layer = base_layer
        self.lora_A = nn.Linear(base_layer.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base_layer.out_features, bias=False)
        nn.init.normal_(self.lora_B.weight, std=0.02)

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x))


class Gemma4Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.self_attn = nn.ModuleDict({"q_proj": nn.Linear(d, d), "o_proj": nn.Linear(d, d)})
        self.mlp = nn.ModuleDict({"up_proj": nn.Linear(d, 2 * d), "down_proj": nn.Linear(2 * d, d)})

    def forward(self, h):
        h = h + self.self_attn["o_proj"](torch.tanh(self.self_attn["q_proj"](h)))
        return h + self.mlp["down_proj"](torch.relu(self.mlp["up_proj"](h)))


class Gemma4VisionModel(nn.Module):
    def __init__(self, patch_dim, d, n_layers):
        super().__init__()
        self.patch_embedder = nn.Linear(patch_dim, d)
        self.layers = nn.ModuleList([Gemma4Block(d) for _ in range(n_layers)])
        self.gradient_checkpointing = False

    def get_input_embeddings(self):
        return self.patch_embedder

    def forward(self, pixel_values):
        hidden_states = self.patch_embedder(pixel_values)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer, hidden_states, use_reentrant=True)
            else:
                hidden_states = layer(hidden_states)
        return hidden_states


class Gemma4TextModel(nn.Module):
    def __init__(self, vocab, d, n_layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Gemma4Block(d) for _ in range(n_layers)])
        self.gradient_checkpointing = False

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, inputs_embeds):
        hidden_states = inputs_embeds
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer, hidden_states, use_reentrant=True)
            else:
                hidden_states = layer(hidden_states)
        return hidden_states


class Gemma4Model(nn.Module):
    def __init__(self, vocab=32, d=16, patch_dim=12, vision_d=8, n_layers=2, image_token_id=3):
        super().__init__()
        self.language_model = Gemma4TextModel(vocab, d, n_layers)   # defined BEFORE vision_tower (as in transformers)
        self.vision_tower = Gemma4VisionModel(patch_dim, vision_d, n_layers)
        self.embed_vision = nn.Linear(vision_d, d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.image_token_id = image_token_id

    def gradient_checkpointing_enable(self):
        self.language_model.gradient_checkpointing = True
        self.vision_tower.gradient_checkpointing = True

    def get_image_features(self, pixel_values):
        return self.embed_vision(self.vision_tower(pixel_values))

    def forward(self, input_ids, pixel_values, labels):
        inputs_embeds = self.language_model.get_input_embeddings()(input_ids)
        image_features = self.get_image_features(pixel_values)
        special_image_mask = (input_ids == self.image_token_id).unsqueeze(-1).expand_as(inputs_embeds)
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features.to(inputs_embeds.dtype))
        hidden_states = self.language_model(inputs_embeds=inputs_embeds)
        logits = self.lm_head(hidden_states)
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def get_peft_model(model, target_regex):
    for p in model.parameters():
        p.requires_grad_(False)
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, nn.Linear) and re.fullmatch(target_regex, full):
                setattr(module, child_name, LoraLinear(child))
    return model


def requires_grad_for_gradient_checkpointing(model):
    # Enables requires_grad so that (reentrant) gradient checkpointing builds a graph through frozen embeddings
    def requires_grad_post_hook(module, input, output):
        output.requires_grad_(True)

    for name, param in model.named_parameters():
        if param.requires_grad: break  # <- no_grad
    module_name = name.split(".")[0]            # e.g. "language_model" / "vision_tower"
    module = getattr(model, module_name)
    print(f"Unsloth: Making `model.{module_name}` require gradients")
    module.get_input_embeddings().register_forward_hook(requires_grad_post_hook)


model = Gemma4Model()
model = get_peft_model(model, r".*(?:language_model|vision_tower).*(?:self_attn|mlp).*(?:q_proj|o_proj|up_proj|down_proj)")
model.gradient_checkpointing_enable()
requires_grad_for_gradient_checkpointing(model)
model.train()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

n_img = 4
input_ids = torch.tensor([[1, 3, 3, 3, 3, 5, 6, 7, 8, 2]])
pixel_values = torch.randn(n_img, 12)
labels = torch.randint(0, 32, (1, 10))

loss = model(input_ids, pixel_values, labels)
optimizer.zero_grad()
loss.backward()
lang_grad = model.language_model.layers[0].self_attn["q_proj"].lora_B.weight.grad
vision_grad = model.vision_tower.layers[0].self_attn["q_proj"].lora_B.weight.grad
print("language LoRA grad:", None if lang_grad is None else lang_grad.norm().item())
print("vision LoRA grad:", None if vision_grad is None else vision_grad.norm().item())
optimizer.step()
