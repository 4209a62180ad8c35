"""huggingface/transformers: gradient checkpointing silently stops LoRA adapters from training.

Source: https://github.com/huggingface/transformers/issues/26221
("Gradient checkpointing should have no functional impact")

What the user saw: a PEFT/LoRA fine-tune gives clearly worse results with gradient checkpointing enabled
than without it, although checkpointing should only trade compute for memory. The user had called
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}), but the
Trainer, run with TrainingArguments(gradient_checkpointing=True) and no gradient_checkpointing_kwargs,
enabled checkpointing again with the default use_reentrant=True.

Why: with the reentrant checkpoint the wrapped block runs under no_grad, and its output only requires grad
if one of its *inputs* does. The embeddings are frozen (LoRA), so the hidden states entering the first
block do not require grad: the checkpointed blocks' outputs carry no graph and the LoRA matrices inside
them never get a gradient. Only the head outside the blocks trains.

Fix (maintainer's answer): pass gradient_checkpointing_kwargs={"use_reentrant": False} to the
TrainingArguments so the Trainer does not reset it (or call model.enable_input_require_grads()).
"""
import functools
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class LoraLinear(nn.Module):
    def __init__(self, d, r=2):
        super().__init__()
        self.base = nn.Linear(d, d)
        self.base.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, d) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(d, r))

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.t() @ self.lora_B.t()


class TinyLM(nn.Module):
    def __init__(self, vocab=20, d=16, n_layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.embed_tokens.requires_grad_(False)
        self.layers = nn.ModuleList([LoraLinear(d) for _ in range(n_layers)])
        self.score = nn.Linear(d, 2)
        self.gradient_checkpointing = False

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        if gradient_checkpointing_kwargs is None:
            gradient_checkpointing_kwargs = {"use_reentrant": True}
        self._gradient_checkpointing_func = functools.partial(checkpoint, **gradient_checkpointing_kwargs)
        self.gradient_checkpointing = True

    def forward(self, input_ids):
        hidden = self.embed_tokens(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden = self._gradient_checkpointing_func(layer.__call__, hidden)
            else:
                hidden = layer(hidden)
            hidden = torch.tanh(hidden)
        return self.score(hidden.mean(1))


class TrainingArguments:
    def __init__(self, gradient_checkpointing=False, gradient_checkpointing_kwargs=None, learning_rate=0.1):
        self.gradient_checkpointing = gradient_checkpointing
        self.gradient_checkpointing_kwargs = gradient_checkpointing_kwargs
        self.learning_rate = learning_rate


class Trainer:
    def __init__(self, model, args):
        self.model, self.args = model, args
        if args.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs)
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.SGD(params, lr=args.learning_rate)

    def train(self, input_ids, labels, steps=5):
        self.model.train()
        for step in range(steps):
            loss = nn.functional.cross_entropy(self.model(input_ids), labels)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            print(f"step {step} loss {loss.item():.4f}")


model = TinyLM()
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
args = TrainingArguments(gradient_checkpointing=True, learning_rate=0.1)  # <- no_grad
trainer = Trainer(model, args)
input_ids = torch.randint(0, 20, (8, 6))
labels = torch.randint(0, 2, (8,))
trainer.train(input_ids, labels)
for name, p in model.named_parameters():
    if "lora" in name:
        print(name, "grad:", None if p.grad is None else p.grad.abs().sum().item(), "norm:", p.norm().item())
