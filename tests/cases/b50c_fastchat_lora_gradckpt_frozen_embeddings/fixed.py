# FastChat -- "Some tensor not requiring a grad"
# https://github.com/lm-sys/FastChat/issues/581  (fixed by PR #1489,
# "Enable input grad for gradient checkpointing in `train_lora`")
# fastchat/train/train_lora.py wraps LLaMA with PEFT LoRA (q_proj/v_proj) and trains
# with --gradient_checkpointing True. get_peft_model freezes every base weight, the
# embedding included, so the hidden states entering the first checkpointed decoder
# layer do not require grad. The (reentrant) torch.utils.checkpoint then runs each
# layer without building a graph ("None of the inputs have requires_grad=True"), the
# LoRA weights inside the layers are cut off, and the Trainer's loss.backward() raises
# "element 0 of tensors does not require grad and does not have a grad_fn".
# Fix (PR #1489): after get_peft_model, `if training_args.gradient_checkpointing:
# model.enable_input_require_grads()` (a forward hook making the embedding output
# require grad).
import math
from dataclasses import dataclass, field
import typing

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

torch.manual_seed(0)


# ---------------- transformers: a tiny LLaMA (modeling_llama.py, v4.28) ----------------
@dataclass
class LlamaConfig:
    vocab_size: int = 64
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    rms_norm_eps: float = 1e-6


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.q_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.o_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)

    def forward(self, hidden_states, attention_mask):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        return (residual + hidden_states,)


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.gradient_checkpointing = False

    def forward(self, input_ids):
        bsz, seq_len = input_ids.shape
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = torch.full((seq_len, seq_len), float("-inf")).triu(1)[None, None]
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            if self.gradient_checkpointing and self.training:
                def create_custom_forward(module):
                    def custom_forward(*inputs):
                        return module(*inputs)
                    return custom_forward
                layer_outputs = torch.utils.checkpoint.checkpoint(
                    create_custom_forward(decoder_layer), hidden_states, attention_mask,
                    use_reentrant=True,
                )
            else:
                layer_outputs = decoder_layer(hidden_states, attention_mask)
            hidden_states = layer_outputs[0]
        return self.norm(hidden_states)


@dataclass
class CausalLMOutput:
    loss: torch.Tensor
    logits: torch.Tensor


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def gradient_checkpointing_enable(self):
        self.model.gradient_checkpointing = True

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)
        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.model(input_ids))
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1),
                               ignore_index=-100)
        return CausalLMOutput(loss=loss, logits=logits)


# ---------------- peft: LoraConfig / get_peft_model (trimmed) ----------------
@dataclass
class LoraConfig:
    r: int = 8
    lora_alpha: int = 16
    target_modules: typing.List[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    lora_dropout: float = 0.05
    bias: str = "none"
    task_type: str = "CAUSAL_LM"


class LoraLinear(nn.Module):
    def __init__(self, base_layer, r, lora_alpha, lora_dropout):
        super().__init__()
        self.base_layer = base_layer
        self.lora_A = nn.Linear(base_layer.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base_layer.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.lora_dropout = nn.Dropout(lora_dropout)
        self.scaling = lora_alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


class PeftModelForCausalLM(nn.Module):
    def __init__(self, model, peft_config):
        super().__init__()
        self.base_model = model
        self.peft_config = peft_config
        for p in model.parameters():          # mark_only_lora_as_trainable
            p.requires_grad = False
        for name, module in list(model.named_modules()):
            for target in peft_config.target_modules:
                if hasattr(module, target) and isinstance(getattr(module, target), nn.Linear):
                    setattr(module, target, LoraLinear(getattr(module, target), peft_config.r,
                                                       peft_config.lora_alpha, peft_config.lora_dropout))

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.base_model, name)

    def print_trainable_parameters(self):
        trainable = sum(p.numel() for p in self.parameters() if p.requires_grad)
        total = sum(p.numel() for p in self.parameters())
        print(f"trainable params: {trainable} || all params: {total}")

    def forward(self, **kwargs):
        return self.base_model(**kwargs)


def get_peft_model(model, peft_config):
    return PeftModelForCausalLM(model, peft_config)


# ---------------- transformers.Trainer (trimmed) ----------------
@dataclass
class TrainingArguments:
    output_dir: str = "output"
    learning_rate: float = 2e-3
    num_train_epochs: int = 1
    gradient_checkpointing: bool = True


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.model = model
        self.args = args
        self.train_dataset = train_dataset

    def training_step(self, model, inputs):
        model.train()
        loss = model(**inputs).loss
        loss.backward()
        return loss.detach()

    def train(self):
        if self.args.gradient_checkpointing:
            self.model.gradient_checkpointing_enable()
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=self.args.learning_rate)
        for epoch in range(self.args.num_train_epochs):
            for step, inputs in enumerate(self.train_dataset):
                tr_loss = self.training_step(self.model, inputs)
                self.optimizer.step()
                self.optimizer.zero_grad()
                print(f"epoch {epoch} step {step} loss {tr_loss.item():.4f}")


# ---------------- fastchat/train/train_lora.py ----------------
@dataclass
class LoraArguments:
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    lora_target_modules: typing.List[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    lora_weight_path: str = ""
    bias: str = "none"


def make_supervised_data_module(vocab_size, n=3, bsz=2, seq_len=12):
    data = []
    for _ in range(n):
        ids = torch.randint(0, vocab_size, (bsz, seq_len))
        labels = ids.clone()
        labels[:, :4] = -100  # IGNORE_TOKEN_ID on the instruction part
        data.append(dict(input_ids=ids, labels=labels))
    return dict(train_dataset=data)


def train():
    training_args = TrainingArguments(gradient_checkpointing=True)
    lora_args = LoraArguments()

    model = LlamaForCausalLM(LlamaConfig())
    lora_config = LoraConfig(
        r=lora_args.lora_r,
        lora_alpha=lora_args.lora_alpha,
        target_modules=lora_args.lora_target_modules,
        lora_dropout=lora_args.lora_dropout,
        bias=lora_args.bias,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora_config)
    model.print_trainable_parameters()

    if training_args.gradient_checkpointing:
        model.enable_input_require_grads()

    data_module = make_supervised_data_module(model.config.vocab_size)
    trainer = Trainer(model=model, args=training_args, **data_module)
    trainer.train()

    lora_B = model.base_model.model.layers[0].self_attn.q_proj.lora_B.weight
    print("q_proj.lora_B weight norm after training:", lora_B.norm().item())


if __name__ == "__main__":
    train()
