"""PEFT QLoRA on DistilBERT for sequence classification (huggingface/peft#1720,
https://github.com/huggingface/peft/issues/1720): since transformers 4.40, get_peft_model(model, LoraConfig(
task_type="SEQ_CLS", ...)) on a 4-bit model fails with "RuntimeError: only Tensors of floating point dtype can
require gradients".
Why (maintainer): transformers 4.40 fixed which modules stay unquantized, so only the last layer (classifier) is
kept in float and DistilBERT's pre_classifier Linear is now quantized to 4-bit (uint8 storage). For SEQ_CLS, PEFT
makes the modules matching "classifier"/"score" fully trainable (modules_to_save, matched by name suffix), which
also matches "pre_classifier"; its trainable copy gets requires_grad_(True) on a uint8 weight, and PyTorch refuses.
Fix (maintainer): load the model with llm_int8_skip_modules=["classifier", "pre_classifier"] so both heads stay in
float."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


# --- bitsandbytes / transformers quantization, in short
class Linear4bit(nn.Module):
    """bnb.nn.Linear4bit, in short: the weight is stored packed as uint8 and dequantized in forward."""

    def __init__(self, linear):
        super().__init__()
        w = linear.weight.detach()
        self.absmax = w.abs().max()
        self.weight = nn.Parameter(((w / self.absmax * 7).round() + 8).to(torch.uint8), requires_grad=False)
        self.bias = nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x):
        return F.linear(x, (self.weight.float() - 8) / 7 * self.absmax, self.bias)


class BitsAndBytesConfig:
    def __init__(self, load_in_4bit=False, bnb_4bit_quant_type="fp4", bnb_4bit_use_double_quant=False,
                 bnb_4bit_compute_dtype=None, llm_int8_skip_modules=None):
        self.load_in_4bit, self.llm_int8_skip_modules = load_in_4bit, llm_int8_skip_modules


def get_keys_to_not_convert(model):
    """transformers >= 4.40: only the output head (the last module) stays unquantized."""
    return [list(model.named_children())[-1][0]]


def replace_with_bnb_linear(model, modules_to_not_convert, prefix=""):
    for name, child in model.named_children():
        if isinstance(child, nn.Linear) and name not in modules_to_not_convert:
            setattr(model, name, Linear4bit(child))
        else:
            replace_with_bnb_linear(child, modules_to_not_convert, prefix + name + ".")


# --- transformers' DistilBertForSequenceClassification, in short
class TransformerBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q_lin, self.v_lin = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.ffn = nn.Linear(dim, dim)

    def forward(self, x):
        attn = torch.softmax(self.q_lin(x) @ x.transpose(1, 2) / x.shape[-1] ** 0.5, dim=-1) @ self.v_lin(x)
        return x + self.ffn(F.gelu(x + attn))


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, vocab_size=30, dim=16, num_labels=2):
        super().__init__()
        self.distilbert = nn.ModuleDict({"embeddings": nn.Embedding(vocab_size, dim), "layer": TransformerBlock(dim)})
        self.pre_classifier = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, num_labels)

    def forward(self, input_ids, labels):
        hidden_state = self.distilbert["layer"](self.distilbert["embeddings"](input_ids))
        logits = self.classifier(F.relu(self.pre_classifier(hidden_state[:, 0])))
        return F.cross_entropy(logits, labels)

    @classmethod
    def from_pretrained(cls, checkpoint, num_labels=2, id2label=None, label2id=None, quantization_config=None):
        torch.manual_seed(0)
        model = cls(num_labels=num_labels)
        if quantization_config is not None and quantization_config.load_in_4bit:
            skip = quantization_config.llm_int8_skip_modules or get_keys_to_not_convert(model)
            replace_with_bnb_linear(model, skip)
        return model


# --- peft, in short
class LoraLayer(nn.Module):
    def __init__(self, base_layer, r=4, lora_alpha=32):
        super().__init__()
        self.base_layer, self.scaling = base_layer, lora_alpha / r
        self.lora_A = nn.Linear(base_layer.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base_layer.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


class ModulesToSaveWrapper(nn.Module):
    def __init__(self, module_to_save, adapter_name="default"):
        super().__init__()
        self.original_module = module_to_save
        self.modules_to_save = nn.ModuleDict({adapter_name: copy.deepcopy(module_to_save)})
        self.original_module.requires_grad_(False)
        self.modules_to_save[adapter_name].requires_grad_(True)

    def forward(self, x):
        return self.modules_to_save["default"](x)


class LoraConfig:
    def __init__(self, task_type=None, r=8, lora_alpha=8, lora_dropout=0.0, target_modules=()):
        self.task_type, self.r, self.lora_alpha, self.target_modules = task_type, r, lora_alpha, target_modules


def get_peft_model(model, peft_config):
    """peft.get_peft_model -> PeftModelForSequenceClassification, in short."""
    model.requires_grad_(False)
    for name, module in list(model.named_modules()):
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        if name.split(".")[-1] in peft_config.target_modules:
            setattr(parent, name.split(".")[-1], LoraLayer(module, peft_config.r, peft_config.lora_alpha))
    modules_to_save = ["classifier", "score"]  # PeftModelForSequenceClassification
    for key in [key for key, _ in model.named_modules()]:  # _set_trainable: matched by suffix
        if key and any(key.endswith(target_key) for target_key in modules_to_save):
            parent = model.get_submodule(key.rsplit(".", 1)[0]) if "." in key else model
            setattr(parent, key.split(".")[-1], ModulesToSaveWrapper(model.get_submodule(key)))
    return model


model_checkpoint = "distilbert/distilbert-base-uncased"
id2label = {0: "NEGATIVE", 1: "POSITIVE"}
label2id = {"NEGATIVE": 0, "POSITIVE": 1}
config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)  # <- autograd_error
model = DistilBertForSequenceClassification.from_pretrained(
    model_checkpoint, num_labels=2, id2label=id2label, label2id=label2id, quantization_config=config)
peft_config = LoraConfig(task_type="SEQ_CLS", r=4, lora_alpha=32, lora_dropout=0.01, target_modules=["q_lin"])
model = get_peft_model(model, peft_config)

trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
before = {n: p.detach().clone() for n, p in trainable.items()}
optimizer = torch.optim.AdamW(trainable.values(), lr=1e-2)
input_ids, labels = torch.randint(0, 30, (8, 10)), torch.randint(0, 2, (8,))
for step in range(5):
    loss = model(input_ids, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("all trainable changed:", all(not torch.equal(before[n], p) for n, p in trainable.items()), sorted(trainable))
