"""PEFT LoRA for sequence classification (huggingface/peft#577): the reporter fine-tunes a LLaMA-style
`...ForSequenceClassification` with LoraConfig(target_modules=lora_target_modules,
modules_to_save=lora_target_modules.append("score")) and finds the trained model behaves as if its classification
head were randomly initialised. The maintainer's answer: `list.append` returns None, so modules_to_save is None and
the new `score` head is not made trainable (it was appended to the LoRA targets instead); get_peft_model freezes
every non-LoRA weight, so score.weight keeps its random initialisation for the whole run. Fix: pass
modules_to_save=["score"] and leave target_modules as the attention projections."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0); torch.set_num_threads(1)


class LoraLinear(nn.Module):
    def __init__(self, base, r=4, lora_alpha=8):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = lora_alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, h):
        att = torch.softmax(self.q_proj(h) @ self.k_proj(h).transpose(1, 2) / h.shape[-1] ** 0.5, dim=-1)
        return h + att @ self.v_proj(h)


class TinyLlamaForSequenceClassification(nn.Module):
    def __init__(self, vocab=40, d=16, num_labels=3):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Block(d) for _ in range(2)])
        self.score = nn.Linear(d, num_labels, bias=False)  # new head, randomly initialised

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.score(h[:, -1])


def get_peft_model(model, target_modules, modules_to_save):
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in target_modules and isinstance(child, nn.Linear):
                setattr(module, child_name, LoraLinear(child))
    for n, p in model.named_parameters():
        p.requires_grad = "lora_" in n or any(n.startswith(m + ".") for m in (modules_to_save or []))
    return model


lora_target_modules = ["q_proj", "v_proj"]
model = TinyLlamaForSequenceClassification()
score_before = model.score.weight.detach().clone()
model = get_peft_model(
    model,
    target_modules=lora_target_modules,
    modules_to_save=lora_target_modules.append("score"),  # <- no_update
)
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
input_ids = torch.randint(0, 40, (16, 8))
labels = torch.randint(0, 3, (16,))
for step in range(6):
    loss = F.cross_entropy(model(input_ids), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("final loss:", round(loss.item(), 4))
head = model.score.base_layer if isinstance(model.score, LoraLinear) else model.score
print("score head trainable:", head.weight.requires_grad)
print("score head changed:", not torch.equal(score_before, head.weight))
