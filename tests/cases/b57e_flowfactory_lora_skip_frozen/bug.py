# [Bug Fix] Fix frozen LoRA parameters when adapter already exists
# https://github.com/X-GenGroup/Flow-Factory/pull/56
#
# Flow-Factory's BaseAdapter.__init__ resumes a LoRA checkpoint (the transformer becomes a
# PeftModel with a "default" adapter), then _freeze_components() freezes the whole component,
# then apply_lora(..., overwrite=False) sees the existing "default" adapter, logs "Skipping."
# and `continue`s -- so nothing ever sets requires_grad=True on lora_A / lora_B again. The GRPO
# step then has no trainable tensor in its graph.
# Fix (merged PR #56): in the skip branch, re-enable requires_grad on every parameter whose name
# contains one of `lora_keys`, and add the component to `results`, before `continue`.
#
# peft / diffusers / accelerate are rewritten below as tiny plain-torch classes keeping their names.
import torch
import torch.nn as nn

torch.manual_seed(0)


# ----------------------------------------------------------------- minimal peft
class LoraConfig:
    def __init__(self, r=4, lora_alpha=4, init_lora_weights="gaussian", target_modules=None):
        self.r = r
        self.lora_alpha = lora_alpha
        self.init_lora_weights = init_lora_weights
        self.target_modules = target_modules


class Linear(nn.Module):  # peft.tuners.lora.Linear
    def __init__(self, base_layer, adapter_name, r, lora_alpha):
        super().__init__()
        self.base_layer = base_layer
        self.lora_A = nn.ModuleDict({adapter_name: nn.Linear(base_layer.in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({adapter_name: nn.Linear(r, base_layer.out_features, bias=False)})
        nn.init.normal_(self.lora_A[adapter_name].weight, std=1 / r)
        nn.init.zeros_(self.lora_B[adapter_name].weight)
        self.scaling = {adapter_name: lora_alpha / r}
        self.active_adapter = adapter_name

    def forward(self, x):
        a = self.active_adapter
        return self.base_layer(x) + self.lora_B[a](self.lora_A[a](x)) * self.scaling[a]


class PeftModel(nn.Module):
    def __init__(self, model, peft_config, adapter_name="default"):
        super().__init__()
        self.base_model = model
        self.peft_config = {adapter_name: peft_config}
        for p in model.parameters():
            p.requires_grad_(False)
        for name, module in list(model.named_modules()):
            for child_name, child in list(module.named_children()):
                full = f"{name}.{child_name}" if name else child_name
                if isinstance(child, nn.Linear) and any(full.endswith(t) for t in peft_config.target_modules):
                    setattr(module, child_name, Linear(child, adapter_name, peft_config.r, peft_config.lora_alpha))

    def set_adapter(self, adapter_name):
        for m in self.modules():
            if isinstance(m, Linear):
                m.active_adapter = adapter_name

    def forward(self, *args, **kwargs):
        return self.base_model(*args, **kwargs)


def get_peft_model(model, peft_config):
    return PeftModel(model, peft_config)


# ------------------------------------------------------------ tiny transformer
class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim)])

    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        attn = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return self.to_out[0](attn @ v)


class SD3Transformer2DModel(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj_in = nn.Linear(dim, dim)
        self.attn = Attention(dim)
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        h = self.proj_in(hidden_states)
        h = h + self.attn(h)
        return self.proj_out(h)


class Pipeline:
    def __init__(self):
        self.transformer = SD3Transformer2DModel()


class ModelArguments:
    resume_path = "ckpt/lora_step_100"  # resuming from a saved LoRA checkpoint
    finetune_type = "lora"
    target_modules = "default"
    target_components = ["transformer"]
    lora_rank = 4
    lora_alpha = 4


# ------------------------------------------------------------- Flow-Factory
class BaseAdapter:
    lora_keys = [
        "lora_A", "lora_B",
        "lora_magnitude_vector",  # DoRA
        "lora_embedding_A", "lora_embedding_B",  # Embedding LoRA
        "modules_to_save",  # Additional modules marked for saving
    ]

    def __init__(self, model_args):
        self.model_args = model_args
        self.pipeline = Pipeline()
        self._components = {}

        # Load checkpoint
        if self.model_args.resume_path:
            self.load_checkpoint(self.model_args.resume_path)

        # Freeze non-trainable components
        self._freeze_components()

        # Apply LoRA if needed
        if self.model_args.finetune_type == "lora":
            self.apply_lora(
                target_modules=self.model_args.target_modules,
                components=self.model_args.target_components,
                overwrite=False,  # Do not overwrite existing adapters
            )

    @property
    def default_target_modules(self):
        return ["to_q", "to_k", "to_v", "to_out.0"]

    def get_component(self, name):
        return self._components.get(name) or getattr(self.pipeline, name)

    def set_component(self, name, module):
        self._components[name] = module

    @property
    def transformer(self):
        return self.get_component("transformer")

    def load_checkpoint(self, path):
        # PeftModel.from_pretrained(transformer, path): wraps with the saved "default" adapter
        config = LoraConfig(r=self.model_args.lora_rank, lora_alpha=self.model_args.lora_alpha,
                            target_modules=self.default_target_modules)
        model = PeftModel(self.pipeline.transformer, config)
        with torch.no_grad():  # stands in for the adapter weights read from `path`
            for m in model.modules():
                if isinstance(m, Linear):
                    m.lora_B["default"].weight.normal_(std=0.1)
        self.set_component("transformer", model)

    def _freeze_components(self):
        for name in ["transformer"]:
            self.get_component(name).requires_grad_(False)

    def apply_lora(self, target_modules, components="transformer", overwrite=False):
        if isinstance(components, str):
            components = [components]
        results = {}
        for comp in components:
            modules = self.default_target_modules if target_modules == "default" else target_modules
            lora_config = LoraConfig(r=self.model_args.lora_rank, lora_alpha=self.model_args.lora_alpha,
                                     init_lora_weights="gaussian", target_modules=modules)
            model_component = self.get_component(comp)

            if isinstance(model_component, PeftModel):
                # Already a PeftModel, check for existing adapter
                has_default = "default" in model_component.peft_config
                if has_default and not overwrite:
                    print(f"Component {comp} already has 'default' adapter. Skipping.")
                    continue  # <- autograd_error
                raise NotImplementedError("add_adapter path not needed for this repro")
            else:
                model_component = get_peft_model(model_component, lora_config)
                self.set_component(comp, model_component)

            model_component.set_adapter("default")
            results[comp] = model_component
        if not results:
            print("No LoRA adapters were applied")
            return {}
        return next(iter(results.values())) if len(results) == 1 else results


# ------------------------------------------------------------- GRPO step
adapter = BaseAdapter(ModelArguments())
transformer = adapter.transformer
optimizer = torch.optim.AdamW(transformer.parameters(), lr=1e-3)

latents = torch.randn(4, 8, 16)
next_latents = torch.randn(4, 8, 16)
sigma, dt = 0.7, 0.1
advantages = torch.randn(4)
with torch.no_grad():
    old_log_prob = -((next_latents - (latents - dt * transformer(latents))) ** 2).mean(dim=(1, 2)) / (2 * sigma ** 2)

noise_pred = transformer(latents)
prev_sample_mean = latents - dt * noise_pred
log_prob = -((next_latents - prev_sample_mean) ** 2).mean(dim=(1, 2)) / (2 * sigma ** 2)
ratio = torch.exp(log_prob - old_log_prob)
loss = -(advantages * ratio).mean()
loss.backward()  # RuntimeError: element 0 of tensors does not require grad
optimizer.step()
lora_A = transformer.base_model.attn.to_q.lora_A["default"].weight
print("lora_A grad norm:", lora_A.grad.norm().item())
