"""The fixed twin: the position-embedding weight stops requiring grad before it is written."""
import numpy as np
import torch
import torch.nn as nn


def create_sinusoidal_embeddings(nb_p, dim, E):
    theta = np.array([[p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for p in range(nb_p)])
    E.requires_grad = False
    E[:, 0::2] = torch.FloatTensor(np.sin(theta[:, 0::2]))
    E[:, 1::2] = torch.FloatTensor(np.cos(theta[:, 1::2]))
    E.detach_()


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size, max_position_embeddings):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.position_embeddings = nn.Embedding(max_position_embeddings, d_model)
        create_sinusoidal_embeddings(nb_p=max_position_embeddings, dim=d_model, E=self.position_embeddings.weight)
        self.LayerNorm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.size(1)).unsqueeze(0).expand_as(input_ids)
        return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(position_ids))


class TransformerClassifier(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, conv_hidden_dim, input_vocab_size, num_answers):
        super().__init__()
        self.embedding = Embeddings(d_model, input_vocab_size, max_position_embeddings=16)
        layer = nn.TransformerEncoderLayer(d_model, num_heads, conv_hidden_dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.dense = nn.Linear(d_model, num_answers)

    def forward(self, x):
        x = self.encoder(self.embedding(x))
        return self.dense(torch.max(x, dim=1)[0])


torch.manual_seed(0)
model = TransformerClassifier(num_layers=1, d_model=8, num_heads=2, conv_hidden_dim=16, input_vocab_size=50, num_answers=2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randint(0, 50, (4, 10)), torch.randint(0, 2, (4,))
for epoch in range(2):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
