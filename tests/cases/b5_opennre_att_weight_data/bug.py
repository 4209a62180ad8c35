"""OpenNRE's bag attention (thunlp/OpenNRE#262): the relation query is read as
`self.fc.weight.data[query]`, so the attention scores carry no gradient to the relation embeddings; fc's
weight learns from the classifier only."""
import torch
from torch import nn


class SentenceEncoder(nn.Module):
    def __init__(self, vocab=40, hidden_size=8):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(vocab, hidden_size)
        self.fc = nn.Linear(hidden_size, hidden_size)

    def forward(self, token):
        return torch.tanh(self.fc(self.embedding(token).mean(dim=1)))


class BagAttention(nn.Module):
    def __init__(self, sentence_encoder, num_class):
        super().__init__()
        self.sentence_encoder = sentence_encoder
        self.fc = nn.Linear(self.sentence_encoder.hidden_size, num_class)
        self.softmax = nn.Softmax(-1)
        self.drop = nn.Dropout(0.0)

    def forward(self, label, token, bag_size):
        rep = self.sentence_encoder(token)
        batch_size = label.size(0)
        query = label.unsqueeze(1)
        att_mat = self.fc.weight.data[query]  # <- data_attr
        rep = rep.view(batch_size, bag_size, -1)
        att_score = (rep * att_mat).sum(-1)
        softmax_att_score = self.softmax(att_score)
        bag_rep = (softmax_att_score.unsqueeze(-1) * rep).sum(1)
        bag_rep = self.drop(bag_rep)
        return self.fc(bag_rep)


torch.manual_seed(0)
model = BagAttention(SentenceEncoder(), num_class=5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
bag_size = 3
label = torch.randint(0, 5, (4,))
token = torch.randint(0, 40, (4 * bag_size, 6))
for epoch in range(3):
    loss = nn.functional.cross_entropy(model(label, token, bag_size), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
