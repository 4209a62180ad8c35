"""Training a T5 adapter with a plain PyTorch loop instead of the Trainer (adapter-hub/adapters#260): the AdamW
optimizer is built from model.parameters() before model.add_adapter() inserts the adapter layers, so the adapter
weights get gradients every step but are in no optimizer, and the saved adapter equals its initialization."""
import torch
import torch.nn.functional as F
from torch import nn


class Adapter(nn.Module):
    def __init__(self, d_model, reduction_factor=4):
        super().__init__()
        self.adapter_down = nn.Linear(d_model, d_model // reduction_factor)
        self.adapter_up = nn.Linear(d_model // reduction_factor, d_model)

    def forward(self, h):
        return h + self.adapter_up(torch.relu(self.adapter_down(h)))


class T5Block(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.layer_norm = nn.LayerNorm(d_model)
        self.DenseReluDense = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model))
        self.adapters = nn.ModuleDict()

    def forward(self, h):
        h = h + self.DenseReluDense(self.layer_norm(h))
        for adapter in self.adapters.values():
            h = adapter(h)
        return h


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, vocab=20, d_model=16, n_layers=2):
        super().__init__()
        self.shared = nn.Embedding(vocab, d_model)
        self.block = nn.ModuleList(T5Block(d_model) for _ in range(n_layers))
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def add_adapter(self, name):
        for block in self.block:
            block.adapters[name] = Adapter(block.layer_norm.normalized_shape[0])

    def train_adapter(self, name):
        for param_name, param in self.named_parameters():
            param.requires_grad = f"adapters.{name}." in param_name

    def forward(self, input_ids):
        h = self.shared(input_ids)
        for block in self.block:
            h = block(h)
        return self.lm_head(h)


torch.manual_seed(0)
model = T5ForConditionalGeneration()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # <- optimizer
model.add_adapter("rte")
model.train_adapter("rte")
input_ids, labels = torch.randint(0, 20, (4, 7)), torch.randint(0, 20, (4, 7))
before = model.block[0].adapters["rte"].adapter_up.weight.detach().clone()
for step in range(3):
    loss = F.cross_entropy(model(input_ids).flatten(0, 1), labels.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("adapter grad is set:", model.block[0].adapters["rte"].adapter_up.weight.grad is not None)
print("adapter weights changed:", not torch.equal(before, model.block[0].adapters["rte"].adapter_up.weight))
