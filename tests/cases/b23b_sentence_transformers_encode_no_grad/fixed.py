"""sentence-transformers (huggingface/sentence-transformers#255,
https://github.com/huggingface/sentence-transformers/issues/255): "Fine tuning in a nested fashion". A model
encodes each paragraph's sentences with self.sentence_encoder.encode(paragraph, convert_to_numpy=False),
torch.stack()s them, mean-pools and feeds Linear layers, expecting BERT to be fine-tuned end to end; it is not:
the encoder's weights get no gradient.
Why: SentenceTransformer.encode() calls self.eval() and runs forward under torch.no_grad(), so the embeddings it
returns are constants ("encode() will not pass any gradients", maintainer).
Fix: tokenize the sentences and call the model's forward, taking output['sentence_embedding']."""
import torch
import torch.nn.functional as F
from torch import nn


class Transformer(nn.Module):
    """Stand-in for sentence_transformers.models.Transformer (BERT): token embeddings from input_ids."""

    def __init__(self, vocab_size=50, dim=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, dim)
        self.encoder = nn.Linear(dim, dim)

    def forward(self, features):
        features["token_embeddings"] = torch.tanh(self.encoder(self.embeddings(features["input_ids"])))
        return features


class Pooling(nn.Module):
    """Stand-in for sentence_transformers.models.Pooling (mean pooling, no parameters)."""

    def forward(self, features):
        mask = features["attention_mask"].unsqueeze(-1).float()
        features["sentence_embedding"] = (features["token_embeddings"] * mask).sum(1) / mask.sum(1)
        return features


class SentenceTransformer(nn.Sequential):
    """sentence_transformers.SentenceTransformer (v0.2.x) in short: tokenize() and encode()."""

    def tokenize(self, texts):
        ids = [[sum(map(ord, w)) % 50 for w in t.split()] for t in texts]
        width = max(len(i) for i in ids)
        return {"input_ids": torch.tensor([i + [0] * (width - len(i)) for i in ids]),
                "attention_mask": torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])}

    def encode(self, sentences, batch_size=32, output_value="sentence_embedding", convert_to_numpy=True):
        self.eval()
        all_embeddings = []
        for start in range(0, len(sentences), batch_size):
            features = self.tokenize(sentences[start:start + batch_size])
            with torch.no_grad():
                out_features = self.forward(features)
                embeddings = out_features[output_value]
                if convert_to_numpy:
                    embeddings = embeddings.to("cpu").numpy()
                all_embeddings.extend(embeddings)
        return all_embeddings


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.sentence_encoder = SentenceTransformer(Transformer(), Pooling())
        self.layers = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, batch_of_paragraphs):
        src_tensors = []
        for paragraph in batch_of_paragraphs:
            paragraph_tensor = self.sentence_encoder(self.sentence_encoder.tokenize(paragraph))
            paragraph_tensor = paragraph_tensor["sentence_embedding"]
            src_tensors.append(paragraph_tensor)
        src_tensors = torch.stack(src_tensors)
        return self.layers(src_tensors.mean(dim=1))


torch.manual_seed(0)
model = Model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
batch_of_paragraphs = [["the cat sat", "on the mat today", "it purred"],
                       ["stocks fell sharply", "markets were down", "investors sold"]]
labels = torch.tensor([0, 1])
bert = model.sentence_encoder[0].encoder.weight
before = bert.detach().clone()
for step in range(5):
    model.train()
    loss = F.cross_entropy(model(batch_of_paragraphs), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("BERT grad is None:", bert.grad is None)
print("BERT weights changed:", not torch.equal(before, bert))
