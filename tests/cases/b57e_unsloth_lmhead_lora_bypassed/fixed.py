# Fix silent dropping of embed_tokens/lm_head when listed in target_modules
# https://github.com/unslothai/unsloth/pull/9331  (fixes https://github.com/unslothai/unsloth/issues/9326)
#
# Following the continued-pretraining recipe, the user lists "lm_head" in target_modules.
# FastLanguageModel.get_peft_model only redirected "embed_tokens" to modules_to_save, so lm_head
# got a LoRA wrapper. But Unsloth's fused cross-entropy path never calls self.lm_head(...): it reads
# the raw `self.lm_head.weight` (which on a LoRA layer is the frozen base weight) and hands it to
# unsloth_fused_ce_loss. The LoRA factors of lm_head are never in the graph: grad None, delta 0.0,
# while q_proj/v_proj LoRA train normally (maintainer measured exactly this in the PR thread).
# Fix (merged): get_peft_model also moves "lm_head" from target_modules to modules_to_save, whose
# trainable copy is what `.weight` returns, so the fused loss trains it.
#
# transformers / peft / unsloth are reduced to small plain-torch classes keeping their names.
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ----------------------------------------------------------------- minimal peft
class Linear(nn.Module):  # peft.tuners.lora.Linear
    def __init__(self, base_layer, adapter_name="default", r=8, lora_alpha=16):
        super().__init__()
        self.base_layer = base_layer
        self.lora_A = nn.ModuleDict({adapter_name: nn.Linear(base_layer.in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({adapter_name: nn.Linear(r, base_layer.out_features, bias=False)})
        nn.init.zeros_(self.lora_B[adapter_name].weight)
        self.scaling = {adapter_name: lora_alpha / r}
        self.active_adapter = adapter_name

    @property
    def weight(self):  # BaseTunerLayer.weight -> the base layer's weight
        return self.base_layer.weight

    @property
    def bias(self):
        return self.base_layer.bias

    def forward(self, x):
        a = self.active_adapter
        return self.base_layer(x) + self.lora_B[a](self.lora_A[a](x)) * self.scaling[a]


class ModulesToSaveWrapper(nn.Module):
    def __init__(self, module_to_save, adapter_name="default"):
        super().__init__()
        self.original_module = module_to_save
        self.modules_to_save = nn.ModuleDict({adapter_name: copy.deepcopy(module_to_save)})
        self.modules_to_save[adapter_name].requires_grad_(True)
        self.active_adapter = adapter_name

    @property
    def weight(self):
        return self.modules_to_save[self.active_adapter].weight

    @property
    def bias(self):
        return self.modules_to_save[self.active_adapter].bias

    def forward(self, x):
        return self.modules_to_save[self.active_adapter](x)


# ------------------------------------------------------------- tiny Llama
class LlamaDecoderLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.self_attn = nn.Module()
        self.self_attn.q_proj = nn.Linear(d, d, bias=False)
        self.self_attn.v_proj = nn.Linear(d, d, bias=False)
        self.mlp = nn.Linear(d, d, bias=False)

    def forward(self, h):
        q, v = self.self_attn.q_proj(h), self.self_attn.v_proj(h)
        att = torch.softmax(q @ h.transpose(-1, -2) / h.shape[-1] ** 0.5, dim=-1)
        h = h + att @ v
        return h + self.mlp(F.silu(h))


class LlamaModel(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaDecoderLayer(d)])
        self.norm = nn.LayerNorm(d)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h)


def unsloth_fused_ce_loss(trainer, hidden_states, lm_head_weight, lm_head_bias, labels, mask=None, n_items=None):
    # chunked linear + cross entropy computed straight from the weight matrix
    logits = F.linear(hidden_states.float(), lm_head_weight.float(),
                      None if lm_head_bias is None else lm_head_bias.float())
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.model = LlamaModel(vocab, d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids, labels):
        hidden_states = self.model(input_ids)
        lm_head_weight = self.lm_head.weight
        lm_head_bias = getattr(self.lm_head, "bias", None)
        # ========= NEW fused =========
        loss = unsloth_fused_ce_loss(
            trainer=None,
            hidden_states=hidden_states,
            lm_head_weight=lm_head_weight,
            lm_head_bias=lm_head_bias,
            labels=labels,
            mask=None,
            n_items=None,
        )
        return loss


def _replace(model, name, new_module):
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, new_module)


class FastLanguageModel:
    @staticmethod
    def get_peft_model(model, r=8, target_modules=(), lora_alpha=16, modules_to_save=None):
        target_modules = list(target_modules)
        modules_to_save = list(modules_to_save or [])
        # LoRA cannot be used on these: train them in full through modules_to_save
        for module in ["embed_tokens", "lm_head"]:
            if module in target_modules:
                target_modules.remove(module)
                modules_to_save.append(module)

        model.requires_grad_(False)
        for name, module in list(model.named_modules()):
            short = name.rpartition(".")[2]
            if isinstance(module, nn.Linear) and short in target_modules:
                _replace(model, name, Linear(module, "default", r, lora_alpha))
            elif short in modules_to_save:
                _replace(model, name, ModulesToSaveWrapper(module))
        return model


# ------------------------------------------------------------- continued pretraining
model = LlamaForCausalLM()
model = FastLanguageModel.get_peft_model(
    model,
    r=8,
    target_modules=["q_proj", "v_proj", "embed_tokens", "lm_head"],  # as in the official CPT guide
    lora_alpha=16,
)
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)

input_ids = torch.randint(0, 32, (4, 12))
for step in range(3):
    loss = model(input_ids, labels=input_ids)
    optimizer.zero_grad()
    loss.backward()
    for name, p in model.named_parameters():
        if p.requires_grad and ("lm_head" in name or "q_proj.lora_A" in name):
            print(f"{name}: grad={'None' if p.grad is None else round(p.grad.norm().item(), 6)}")
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
