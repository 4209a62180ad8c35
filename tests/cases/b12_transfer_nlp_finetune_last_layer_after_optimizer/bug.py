"""Fine-tuning the last layer in transfer-nlp (feedly/transfer-nlp#14): `finetune_last_layer` freezes every parameter
and swaps the classifier's final Linear for a new one with `num_labels` outputs, but the trainer's optimizer was built
when the trainer was set up, from the old model's parameters. The reviewer: "maybe do add_param_group like we
discussed?" Without it the new layer gets gradients, sits in no optimizer, and the frozen model never changes."""
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
        self.model.classifier = torch.nn.Sequential(*features, torch.nn.Linear(number_features, num_labels))  # <- optimizer

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
