"""The fixed twin: the optimizer holds every parameter, so the layers LISA switches on are stepped (frozen ones have
no gradient and are skipped) (OptimalScale/LMFlow#726)."""
import torch
import torch.nn.functional as F
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=16, n_layers=4):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) for _ in range(n_layers))
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = h + layer(h)
        return self.lm_head(h)


class DynamicLayerActivationCallback:
    def __init__(self, n_layers, interval_steps, model):
        self.n_layers, self.interval_steps, self.layers = n_layers, interval_steps, model.layers
        self.freeze_all_layers()

    def freeze_all_layers(self):
        for layer in self.layers:
            layer.requires_grad_(False)

    def on_step_begin(self, global_step):
        if global_step % self.interval_steps == 0:
            self.freeze_all_layers()
            for idx in torch.randperm(len(self.layers))[:self.n_layers].tolist():
                self.layers[idx].requires_grad_(True)


torch.manual_seed(0)
model = TinyLM()
callback = DynamicLayerActivationCallback(n_layers=2, interval_steps=1, model=model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
ids = torch.randint(0, 32, (4, 9))
before = [layer[0].weight.detach().clone() for layer in model.layers]
for global_step in range(6):
    callback.on_step_begin(global_step)
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 32), ids[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("layers changed:", [not torch.equal(layer[0].weight, b) for layer, b in zip(model.layers, before)])
