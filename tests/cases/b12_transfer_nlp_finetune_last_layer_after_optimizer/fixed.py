"""The fixed twin: the new layer's parameters are added to the optimizer as a parameter group, as the review asks
(feedly/transfer-nlp#14)."""
import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self, vocab=50, dim=16, num_labels=4):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab, dim)
        self.classifier = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_labels))
        self.num_labels = num_labels

    def forward(self, tokens):
        return self.classifier(self.embedding(tokens))


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

    def finetune_last_layer(self, num_labels):
        for param in self.model.parameters():
            param.requires_grad = False
        number_features = self.model.classifier[-1].in_features
        features = list(self.model.classifier.children())[:-1]
        self.model.classifier = torch.nn.Sequential(*features, torch.nn.Linear(number_features, num_labels))
        self.optimizer.add_param_group({"params": self.model.classifier[-1].parameters()})

    def train(self, tokens, labels, steps=3):
        for step in range(steps):
            loss = F.cross_entropy(self.model(tokens), labels)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


torch.manual_seed(0)
trainer = Trainer(Classifier())
trainer.finetune_last_layer(num_labels=2)
new_layer = trainer.model.classifier[-1]
before = new_layer.weight.detach().clone()
trainer.train(torch.randint(0, 50, (8, 6)), torch.randint(0, 2, (8,)))
print(f"new layer grad set: {new_layer.weight.grad is not None}; changed: {not torch.equal(new_layer.weight, before)}")
