# Tevatron -- "fix no trainable parameters error"
# https://github.com/texttron/tevatron/pull/122
# EncoderModel.build (src/tevatron/retriever/modeling/encoder.py) continues training
# from an existing LoRA adapter (--lora_name_or_path) with
#     PeftModel.from_pretrained(base_model, model_args.lora_name_or_path)
# PeftModel.from_pretrained loads an adapter in inference mode by default
# (is_trainable=False): the LoRA weights come back frozen like the base model, so the
# retriever has no trainable parameter at all and the Trainer's loss.backward() raises
# "element 0 of tensors does not require grad and does not have a grad_fn".
# Fix (PR #122): PeftModel.from_pretrained(base_model, model_args.lora_name_or_path,
# is_trainable=True) -- "the adapter by default is in inference mode. this change makes
# sure the adapter's parameters are trainable".
import math
from dataclasses import dataclass
from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

torch.manual_seed(0)


# ---------------- transformers: a tiny decoder-only encoder (AutoModel stand-in) ----------------
@dataclass
class PretrainedConfig:
    vocab_size: int = 64
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    pad_token_id: Optional[int] = None


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x, mask):
        b, t, h = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
        out = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h)
        return self.o_proj(out)


class DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(config.hidden_size)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = nn.LayerNorm(config.hidden_size)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_size, 2 * config.hidden_size), nn.SiLU(),
                                 nn.Linear(2 * config.hidden_size, config.hidden_size))

    def forward(self, x, mask):
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


@dataclass
class BaseModelOutput:
    last_hidden_state: Tensor


class AutoModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)

    @classmethod
    def from_pretrained(cls, model_name_or_path, **hf_kwargs):
        torch.manual_seed(1234)  # "pretrained" weights: same every time
        return cls(PretrainedConfig())

    def forward(self, input_ids, attention_mask, return_dict=True):
        t = input_ids.shape[1]
        causal = torch.full((t, t), float("-inf")).triu(1)
        pad = (1.0 - attention_mask[:, None, None, :].float()) * -1e4
        mask = causal[None, None] + pad
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return BaseModelOutput(last_hidden_state=self.norm(x))


# ---------------- peft (trimmed): LoraConfig, get_peft_model, PeftModel.from_pretrained ----------------
ADAPTER_STORE = {}  # stands in for the adapter directory on disk


@dataclass
class LoraConfig:
    base_model_name_or_path: str = None
    task_type: str = "FEATURE_EXTRACTION"
    r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: tuple = ("q_proj", "v_proj")
    inference_mode: bool = False

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        return ADAPTER_STORE[path]["config"]


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


class PeftModel(nn.Module):
    def __init__(self, model, peft_config):
        super().__init__()
        self.base_model = model
        self.peft_config = peft_config
        for p in model.parameters():
            p.requires_grad = False
        for name, module in list(model.named_modules()):
            for target in peft_config.target_modules:
                if hasattr(module, target) and isinstance(getattr(module, target), nn.Linear):
                    setattr(module, target, LoraLinear(getattr(module, target), peft_config.r,
                                                       peft_config.lora_alpha, peft_config.lora_dropout))
        if peft_config.inference_mode:
            for p in self.parameters():
                p.requires_grad = False

    @property
    def config(self):
        return self.base_model.config

    @classmethod
    def from_pretrained(cls, model, model_id, config=None, is_trainable=False):
        config = config if config is not None else LoraConfig.from_pretrained(model_id)
        config.inference_mode = not is_trainable
        peft_model = cls(model, config)
        peft_model.load_state_dict(ADAPTER_STORE[model_id]["adapter"], strict=False)
        return peft_model

    def save_pretrained(self, path):
        ADAPTER_STORE[path] = {
            "config": self.peft_config,
            "adapter": {k: v.detach().clone() for k, v in self.state_dict().items() if "lora_" in k},
        }

    def forward(self, **kwargs):
        return self.base_model(**kwargs)


def get_peft_model(model, peft_config):
    return PeftModel(model, peft_config)


# ---------------- tevatron/retriever/arguments.py ----------------
@dataclass
class ModelArguments:
    model_name_or_path: str = "tiny-llama"
    pooling: str = "eos"
    normalize: bool = True
    temperature: float = 0.05
    lora: bool = True
    lora_name_or_path: Optional[str] = None
    lora_target_modules: str = "q_proj,v_proj"
    lora_r: int = 8
    lora_alpha: int = 64
    lora_dropout: float = 0.1


@dataclass
class TrainingArguments:
    output_dir: str = "retriever-lora"
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    gradient_checkpointing: bool = False
    num_train_epochs: int = 1


# ---------------- tevatron/retriever/modeling/encoder.py + dense.py ----------------
@dataclass
class EncoderOutput:
    q_reps: Optional[Tensor] = None
    p_reps: Optional[Tensor] = None
    loss: Optional[Tensor] = None
    scores: Optional[Tensor] = None


class EncoderModel(nn.Module):
    TRANSFORMER_CLS = AutoModel

    def __init__(self, encoder, pooling="cls", normalize=False, temperature=1.0):
        super().__init__()
        self.config = encoder.config
        self.encoder = encoder
        self.pooling = pooling
        self.normalize = normalize
        self.temperature = temperature
        self.cross_entropy = nn.CrossEntropyLoss(reduction="mean")

    def forward(self, query: Dict[str, Tensor] = None, passage: Dict[str, Tensor] = None):
        q_reps = self.encode_query(query) if query else None
        p_reps = self.encode_passage(passage) if passage else None
        if q_reps is None or p_reps is None:
            return EncoderOutput(q_reps=q_reps, p_reps=p_reps)
        scores = self.compute_similarity(q_reps, p_reps)
        scores = scores.view(q_reps.size(0), -1)
        target = torch.arange(scores.size(0), device=scores.device, dtype=torch.long)
        target = target * (p_reps.size(0) // q_reps.size(0))
        loss = self.compute_loss(scores / self.temperature, target)
        return EncoderOutput(loss=loss, scores=scores, q_reps=q_reps, p_reps=p_reps)

    def compute_similarity(self, q_reps, p_reps):
        return torch.matmul(q_reps, p_reps.transpose(0, 1))

    def compute_loss(self, scores, target):
        return self.cross_entropy(scores, target)

    @classmethod
    def build(cls, model_args: ModelArguments, train_args: TrainingArguments, **hf_kwargs):
        base_model = cls.TRANSFORMER_CLS.from_pretrained(model_args.model_name_or_path, **hf_kwargs)
        if base_model.config.pad_token_id is None:
            base_model.config.pad_token_id = 0
        if model_args.lora or model_args.lora_name_or_path:
            if model_args.lora_name_or_path:
                lora_config = LoraConfig.from_pretrained(model_args.lora_name_or_path, **hf_kwargs)
                lora_model = PeftModel.from_pretrained(base_model, model_args.lora_name_or_path, is_trainable=True)
            else:
                lora_config = LoraConfig(
                    base_model_name_or_path=model_args.model_name_or_path,
                    task_type="FEATURE_EXTRACTION",
                    r=model_args.lora_r,
                    lora_alpha=model_args.lora_alpha,
                    lora_dropout=model_args.lora_dropout,
                    target_modules=tuple(model_args.lora_target_modules.split(",")),
                    inference_mode=False,
                )
                lora_model = get_peft_model(base_model, lora_config)
            model = cls(encoder=lora_model, pooling=model_args.pooling,
                        normalize=model_args.normalize, temperature=model_args.temperature)
        else:
            model = cls(encoder=base_model, pooling=model_args.pooling,
                        normalize=model_args.normalize, temperature=model_args.temperature)
        return model

    def save(self, output_dir: str):
        self.encoder.save_pretrained(output_dir)


class DenseModel(EncoderModel):
    def encode_query(self, qry):
        query_hidden_states = self.encoder(**qry, return_dict=True)
        return self._pooling(query_hidden_states.last_hidden_state, qry["attention_mask"])

    def encode_passage(self, psg):
        return self.encode_query(psg)

    def _pooling(self, last_hidden_state, attention_mask):
        if self.pooling in ["cls", "first"]:
            reps = last_hidden_state[:, 0]
        elif self.pooling in ["mean", "avg", "average"]:
            masked = last_hidden_state.masked_fill(~attention_mask[..., None].bool(), 0.0)
            reps = masked.sum(dim=1) / attention_mask.sum(dim=1)[..., None]
        else:  # eos / last
            sequence_lengths = attention_mask.sum(dim=1) - 1
            reps = last_hidden_state[torch.arange(last_hidden_state.shape[0]), sequence_lengths]
        if self.normalize:
            reps = F.normalize(reps, p=2, dim=-1)
        return reps


# ---------------- tevatron/retriever/trainer.py (HF Trainer, trimmed) ----------------
class TevatronTrainer:
    def __init__(self, model, args, train_dataset):
        self.model = model
        self.args = args
        self.train_dataset = train_dataset

    def create_optimizer(self):
        decay = [p for n, p in self.model.named_parameters() if "bias" not in n and p.requires_grad]
        no_decay = [p for n, p in self.model.named_parameters() if "bias" in n and p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.args.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}], lr=self.args.learning_rate)

    def compute_loss(self, model, inputs):
        query, passage = inputs
        return model(query=query, passage=passage).loss

    def training_step(self, model, inputs):
        model.train()
        loss = self.compute_loss(model, inputs)
        loss.backward()
        return loss.detach()

    def train(self):
        self.create_optimizer()
        for epoch in range(self.args.num_train_epochs):
            for step, inputs in enumerate(self.train_dataset):
                tr_loss = self.training_step(self.model, inputs)
                self.optimizer.step()
                self.optimizer.zero_grad()
                print(f"epoch {epoch} step {step} loss {tr_loss.item():.4f}")


def make_batches(n=3, n_q=2, n_psg=2, seq_len=10, vocab=64):
    batches = []
    for _ in range(n):
        q = {"input_ids": torch.randint(1, vocab, (n_q, seq_len)),
             "attention_mask": torch.ones(n_q, seq_len, dtype=torch.long)}
        p = {"input_ids": torch.randint(1, vocab, (n_q * n_psg, seq_len)),
             "attention_mask": torch.ones(n_q * n_psg, seq_len, dtype=torch.long)}
        batches.append((q, p))
    return batches


# ---------------- tevatron/retriever/driver/train.py ----------------
def main():
    # an earlier LoRA run saved its adapter to "retriever-lora-stage1"
    stage1 = DenseModel.build(ModelArguments(), TrainingArguments())
    stage1.save("retriever-lora-stage1")

    # continue training from that adapter
    model_args = ModelArguments(lora_name_or_path="retriever-lora-stage1")
    training_args = TrainingArguments()
    model = DenseModel.build(model_args, training_args)

    trainer = TevatronTrainer(model=model, args=training_args, train_dataset=make_batches())
    trainer.train()

    lora_B = model.encoder.base_model.layers[0].self_attn.q_proj.lora_B.weight
    print("q_proj.lora_B weight norm after training:", lora_B.norm().item())


if __name__ == "__main__":
    main()
