"""The fixed twin: non-reentrant checkpointing records the layers' graph whatever the inputs require."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class TinyBert(nn.Module):
    def __init__(self, vocab=40, hidden=16, num_layers=2, num_labels=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.layer = nn.ModuleList([nn.TransformerEncoderLayer(hidden, nhead=2, dim_feedforward=32, dropout=0.0,
                                                               batch_first=True) for _ in range(num_layers)])
        self.classifier = nn.Linear(hidden, num_labels)
        self.gradient_checkpointing = True

    def forward(self, input_ids):
        hidden_states = self.embeddings(input_ids)
        for layer_module in self.layer:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer_module, hidden_states, use_reentrant=False)
            else:
                hidden_states = layer_module(hidden_states)
        return self.classifier(hidden_states[:, 0])


torch.manual_seed(0)
model = TinyBert()
model.embeddings.weight.requires_grad = False
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
model.train()
input_ids, labels = torch.randint(0, 40, (8, 6)), torch.randint(0, 2, (8,))
for step in range(2):
    loss = nn.functional.cross_entropy(model(input_ids), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}, encoder grad {model.layer[0].linear1.weight.grad}")
