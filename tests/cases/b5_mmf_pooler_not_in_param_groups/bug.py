"""facebookresearch/mmf#620: after the pooler moved out of the classifier (#568),
get_optimizer_parameters still lists only the classifier and the BERT encoder, so the pooler gets
gradients that no optimizer applies."""
import torch
from torch import nn


class BertEncoder(nn.Module):
    def __init__(self, vocab=30, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.layer = nn.TransformerEncoderLayer(hidden, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, input_ids):
        return self.layer(self.embeddings(input_ids))


class VisualBERTForClassification(nn.Module):
    def __init__(self, num_labels=3, hidden=16):
        super().__init__()
        self.bert = BertEncoder(hidden=hidden)
        self.pooler = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh())
        self.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(hidden, num_labels))

    def forward(self, input_ids):
        sequence_output = self.bert(input_ids)
        pooled_output = self.pooler(sequence_output[:, 0])
        return self.classifier(pooled_output)

    def get_optimizer_parameters(self, lr, finetune_lr_multiplier):
        return [{"params": self.classifier.parameters()}, {"params": self.bert.parameters(), "lr": lr * finetune_lr_multiplier}]  # <- optimizer


torch.manual_seed(0)
model = VisualBERTForClassification()
lr = 1e-3
optimizer = torch.optim.AdamW(model.get_optimizer_parameters(lr, finetune_lr_multiplier=0.1), lr=lr)
input_ids, labels = torch.randint(0, 30, (8, 5)), torch.randint(0, 3, (8,))
pooler_before = model.pooler[0].weight.detach().clone()
for step in range(3):
    loss = nn.functional.cross_entropy(model(input_ids), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("pooler changed:", not torch.equal(pooler_before, model.pooler[0].weight))
