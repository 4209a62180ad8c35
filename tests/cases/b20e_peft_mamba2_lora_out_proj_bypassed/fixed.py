"""PEFT LoRA on Mamba2 (huggingface/peft#2274, https://github.com/huggingface/peft/issues/2274): LoRA with
target_modules=["embeddings", "in_proj", "out_proj"] on transformers' Mamba2ForCausalLM; the out_proj LoRA
matrices get no gradient (.grad stays None) and never change, while the in_proj/embeddings adapters train.
Why: in training, Mamba2Mixer.cuda_kernels_forward hands self.out_proj.weight / self.out_proj.bias straight to
the fused kernel mamba_split_conv1d_scan_combined, so out_proj.forward (the LoRA wrapper's forward, where
lora_A/lora_B act) is never called; the maintainer confirmed that adapters on modules used this way cannot work.
Fix: do not target out_proj (target only modules whose forward is called: "embeddings", "in_proj")."""
import torch
import torch.nn.functional as F
from torch import nn


def mamba_split_conv1d_scan_combined(zxbcdt, conv1d_weight, conv1d_bias, D, outproj_weight=None, outproj_bias=None):
    """mamba_ssm's fused kernel, in short: it reads out_proj's weight tensor, it never calls out_proj."""
    z, xBC = zxbcdt.chunk(2, dim=-1)
    x = F.conv1d(xBC.transpose(1, 2), conv1d_weight, conv1d_bias, padding=conv1d_weight.shape[-1] - 1,
                 groups=xBC.shape[-1])[..., : xBC.shape[1]].transpose(1, 2)
    y = F.silu(x) * D * F.silu(z)
    return F.linear(y, outproj_weight, outproj_bias)


class Mamba2Mixer(nn.Module):
    """transformers' Mamba2Mixer, in short."""

    def __init__(self, hidden_size=16, intermediate_size=32, conv_kernel=4):
        super().__init__()
        self.in_proj = nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.conv1d = nn.Conv1d(intermediate_size, intermediate_size, conv_kernel, groups=intermediate_size)
        self.D = nn.Parameter(torch.ones(intermediate_size))
        self.out_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def cuda_kernels_forward(self, hidden_states):
        projected_states = self.in_proj(hidden_states)
        return mamba_split_conv1d_scan_combined(
            projected_states, self.conv1d.weight, self.conv1d.bias, self.D,
            outproj_weight=self.out_proj.weight, outproj_bias=self.out_proj.bias)

    def forward(self, hidden_states):
        return self.cuda_kernels_forward(hidden_states)


class Mamba2ForCausalLM(nn.Module):
    def __init__(self, vocab_size=50, hidden_size=16, num_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList(nn.ModuleDict({"mixer": Mamba2Mixer(hidden_size)}) for _ in range(num_layers))
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, labels):
        hidden_states = self.embeddings(input_ids)
        for layer in self.layers:
            hidden_states = hidden_states + layer["mixer"](hidden_states)
        logits = self.lm_head(hidden_states)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


class LoraLayer(nn.Module):
    """peft's lora.Linear / lora.Embedding, in short (BaseTunerLayer exposes the base layer's weight/bias)."""

    def __init__(self, base_layer, r=8, lora_alpha=8):
        super().__init__()
        self.base_layer, self.scaling = base_layer, lora_alpha / r
        n_in, n_out = (base_layer.num_embeddings, base_layer.embedding_dim) if isinstance(base_layer, nn.Embedding) \
            else (base_layer.in_features, base_layer.out_features)
        self.lora_A = nn.ParameterDict({"default": nn.Parameter(torch.randn(r, n_in) * 0.1)})
        self.lora_B = nn.ParameterDict({"default": nn.Parameter(torch.zeros(n_out, r))})

    @property
    def weight(self):
        return self.base_layer.weight

    @property
    def bias(self):
        return self.base_layer.bias

    def forward(self, x):
        A, B = self.lora_A["default"], self.lora_B["default"]
        after_A = F.embedding(x, A.T) if isinstance(self.base_layer, nn.Embedding) else x @ A.T
        return self.base_layer(x) + after_A @ B.T * self.scaling


class LoraConfig:
    def __init__(self, r=8, target_modules=(), task_type=None, bias="none"):
        self.r, self.target_modules = r, target_modules


def get_peft_model(model, config):
    """peft.get_peft_model, in short: freeze the base model, wrap every module whose name ends in a target."""
    model.requires_grad_(False)
    for name, module in list(model.named_modules()):
        if name.split(".")[-1] in config.target_modules:
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.split(".")[-1], LoraLayer(module, r=config.r))
    return model


torch.manual_seed(0)
model = Mamba2ForCausalLM()
lora_config = LoraConfig(r=8, target_modules=["embeddings", "in_proj"], task_type="CAUSAL_LM", bias="none")
model = get_peft_model(model, lora_config)
model.train()
trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
before = {n: p.detach().clone() for n, p in trainable.items()}
optimizer = torch.optim.AdamW(trainable.values(), lr=1e-2, weight_decay=0.0)
input_ids = torch.randint(0, 50, (4, 12))
for step in range(5):
    loss = model(input_ids, labels=input_ids)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
for n, p in trainable.items():
    print(f"{n}: grad is None={p.grad is None} changed={not torch.equal(before[n], p)}")
