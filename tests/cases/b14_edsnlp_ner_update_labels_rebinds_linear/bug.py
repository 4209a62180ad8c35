"""EDS-NLP's trainable NER (aphp/edsnlp#443): `post_init` infers the labels from the training documents and
`update_labels` builds a bigger Linear, copies the old rows and rebinds `self.linear.weight` / `.bias` to the new
Parameters; the optimizer, built from the pipeline's parameters before post_init ran, keeps the old ones, so the
tag scorer gets gradients but is never trained. The PR updates the parameters in place instead."""
import torch
import torch.nn.functional as F
from torch import nn


class TrainableNerCrf(nn.Module):
    def __init__(self, vocab_size=50, hidden=16, labels=None):
        super().__init__()
        self.embedding = nn.Sequential(nn.Embedding(vocab_size, hidden), nn.Linear(hidden, hidden), nn.Tanh())
        self.output_size = hidden
        self.labels = labels
        self.linear = nn.Linear(self.output_size, 0 if labels is None else len(labels) * 5)

    def post_init(self, docs):
        inferred_labels = set(label for _, spans in docs for _, _, label in spans)
        if self.labels is None:
            self.update_labels(sorted(inferred_labels))

    def update_labels(self, labels):
        old_labels = self.labels if self.labels is not None else ()
        old_index = torch.arange(len(old_labels) * 5).view(-1, 5)[
            [labels.index(label) for label in old_labels if label in labels]].view(-1)
        new_index = torch.arange(len(labels) * 5).view(-1, 5)[
            [old_labels.index(label) for label in old_labels if label in labels]].view(-1)
        new_linear = nn.Linear(self.output_size, len(labels) * 5)
        new_linear.weight.data[new_index] = self.linear.weight.data[old_index]
        new_linear.bias.data[new_index] = self.linear.bias.data[old_index]
        self.linear.weight = new_linear.weight  # <- optimizer
        self.linear.out_features = new_linear.out_features
        self.linear.bias = new_linear.bias
        self.labels = labels

    def forward(self, token_ids, targets):
        embeddings = self.embedding(token_ids)
        num_contexts, num_words = embeddings.shape[:-1]
        scores = self.linear(embeddings).view((num_contexts, num_words, len(self.labels), 5))
        return F.cross_entropy(scores.view(-1, 5), targets.view(-1), ignore_index=-1, reduction="sum")


torch.manual_seed(0)
docs = [(torch.randint(0, 50, (7,)).tolist(), [(1, 3, "DATE"), (4, 5, "DRUG")]),
        (torch.randint(0, 50, (7,)).tolist(), [(0, 2, "DRUG")])]
ner = TrainableNerCrf()
optimizer = torch.optim.AdamW(ner.parameters(), lr=1e-2)
ner.post_init(docs)
token_ids = torch.tensor([tokens for tokens, _ in docs])
targets = torch.zeros(2, 7, len(ner.labels), dtype=torch.long)  # 0 O, 1 I, 2 B, 3 L, 4 U
for i, (_, spans) in enumerate(docs):
    for start, end, label in spans:
        j = ner.labels.index(label)
        if end - start == 1:
            targets[i, start, j] = 4
        else:
            targets[i, start, j], targets[i, end - 1, j] = 2, 3
            targets[i, start + 1:end - 1, j] = 1
scorer_before = ner.linear.weight.detach().clone()
for step in range(4):
    loss = ner(token_ids, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print(f"tag scorer grad set: {ner.linear.weight.grad is not None}; "
      f"changed: {not torch.equal(scorer_before, ner.linear.weight)}")
