"""The fixed twin: the non-reentrant checkpoint, which needs no input that requires grad (huggingface/transformers#23170)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class AdapterLayer(nn.Module):
    def __init__(self, d=16, r=4):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.adapter_down = nn.Linear(d, r)
        self.adapter_up = nn.Linear(r, d)

    def forward(self, hidden):
        hidden = hidden + torch.tanh(self.dense(hidden))
        return hidden + self.adapter_up(F.relu(self.adapter_down(hidden)))


class Encoder(nn.Module):
    def __init__(self, vocab=100, d=16, n_layers=3, n_labels=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(AdapterLayer(d) for _ in range(n_layers))
        self.classifier = nn.Linear(d, n_labels)
        self.gradient_checkpointing = False

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def forward(self, input_ids):
        hidden = self.embeddings(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden = checkpoint(layer, hidden, use_reentrant=False)
            else:
                hidden = layer(hidden)
        return self.classifier(hidden.mean(1))


torch.manual_seed(0)
model = Encoder()
for name, param in model.named_parameters():
    param.requires_grad = "adapter" in name
model.gradient_checkpointing_enable()
model.train()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
input_ids, labels = torch.randint(0, 100, (8, 12)), torch.randint(0, 2, (8,))
for step in range(3):
    loss = F.cross_entropy(model(input_ids), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
