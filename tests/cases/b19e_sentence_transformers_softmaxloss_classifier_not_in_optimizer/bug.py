"""sentence-transformers (huggingface/sentence-transformers#2872,
https://github.com/huggingface/sentence-transformers/issues/2872, fixed by PR #2881): training with
SoftmaxLoss(model, 384, 3) through SentenceTransformerTrainer (v3.0.1), the reporter found that the classifier's
weights "do not changed at all" after many steps, although they have gradients.
Why: SoftmaxLoss owns a trainable `self.classifier = nn.Linear(3 * dim, num_labels)`, but the trainer (the
transformers Trainer's create_optimizer) builds the optimizer from `self.model.parameters()` only, the
SentenceTransformer; the loss module's classifier gets a .grad every step and is in no optimizer.
Fix (PR #2881): initialize the optimizer over the model and the loss(es), not just the model."""
import torch
from torch import nn


class SentenceTransformer(nn.Module):
    """sentence_transformers.SentenceTransformer in short: token embeddings + mean Pooling."""

    def __init__(self, vocab_size=50, dim=16):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim)
        self.dense = nn.Linear(dim, dim)

    def forward(self, features):
        token_embeddings = self.dense(self.word_embeddings(features["input_ids"]))
        mask = features["attention_mask"].unsqueeze(-1).float()
        features["sentence_embedding"] = (token_embeddings * mask).sum(1) / mask.sum(1)
        return features


class SoftmaxLoss(nn.Module):
    """sentence_transformers.losses.SoftmaxLoss (concatenation of u, v, |u - v|)."""

    def __init__(self, model, sentence_embedding_dimension, num_labels):
        super().__init__()
        self.model = model
        self.num_labels = num_labels
        self.classifier = nn.Linear(3 * sentence_embedding_dimension, num_labels)
        self.loss_fct = nn.CrossEntropyLoss()

    def forward(self, sentence_features, labels):
        reps = [self.model(sentence_feature)["sentence_embedding"] for sentence_feature in sentence_features]
        rep_a, rep_b = reps
        features = torch.cat([rep_a, rep_b, torch.abs(rep_a - rep_b)], 1)
        output = self.classifier(features)
        return self.loss_fct(output, labels.view(-1))


class SentenceTransformerTrainer:
    """SentenceTransformerTrainer on top of transformers.Trainer, in short."""

    def __init__(self, model, train_dataset, loss, learning_rate=5e-3):
        self.model, self.train_dataset, self.loss = model, train_dataset, loss
        self.learning_rate = learning_rate
        self.optimizer = None

    def create_optimizer(self):
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.learning_rate)  # <- optimizer
        return self.optimizer

    def compute_loss(self, model, inputs):
        features = [inputs["sentence_0"], inputs["sentence_1"]]
        return self.loss(features, inputs["label"])

    def train(self):
        self.create_optimizer()
        for step, inputs in enumerate(self.train_dataset):
            loss = self.compute_loss(self.model, inputs)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            print(f"step {step} loss {loss.item():.4f}")


torch.manual_seed(0)


def batch():
    ids = lambda: torch.randint(1, 50, (8, 6))
    return {"sentence_0": {"input_ids": ids(), "attention_mask": torch.ones(8, 6, dtype=torch.long)},
            "sentence_1": {"input_ids": ids(), "attention_mask": torch.ones(8, 6, dtype=torch.long)},
            "label": torch.randint(0, 3, (8,))}


model = SentenceTransformer()
train_dataset = [batch() for _ in range(5)]
softmax_loss = SoftmaxLoss(model, 16, 3)
before = softmax_loss.classifier.weight.detach().clone()
trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=softmax_loss)
trainer.train()
print("classifier weights changed:", not torch.equal(before, softmax_loss.classifier.weight))
