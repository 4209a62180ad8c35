"""RecBole FwFM (RUCAIBox/RecBole#1413, fixed by #1414): fwfm_layer() builds the field-pair weight r_{F(i),F(j)} as
`r = nn.Parameter(para, requires_grad=True)` from a fresh torch.randn inside forward, so "every batch learns a new
field interaction weight matrix" (the issue): the weight is random at every call, is never a registered parameter,
the trainer's optimizer never holds it and nothing it gets from backward survives the step. The fix moves the weight
into __init__ (the merged #1414 code stores it there as a plain `torch.randn(..., requires_grad=True)`, which
is still outside model.parameters(); fixed.py wraps it in nn.Parameter so it trains). Tiny embedding table and random click data stand in for RecBole's dataset/ContextRecommender."""
import torch
import torch.nn as nn


class FwFM(nn.Module):
    def __init__(self, num_features=4, feature_vocab=10, embedding_size=8, dropout_prob=0.0):
        super(FwFM, self).__init__()
        self.device = torch.device("cpu")
        self.embedding_size = embedding_size
        self.num_features = num_features
        self.feature2field = {i: i for i in range(num_features)}
        self.num_fields = len(set(self.feature2field.values()))  # the number of fields
        self.num_pair = self.num_fields * self.num_fields
        self.weight = nn.Parameter(torch.randn(self.num_fields, self.num_fields, 1, device=self.device))
        self.token_embedding_table = nn.Embedding(num_features * feature_vocab, embedding_size)
        self.first_order_linear = nn.Embedding(num_features * feature_vocab, 1)
        self.offsets = torch.arange(num_features) * feature_vocab
        self.dropout_layer = nn.Dropout(p=dropout_prob)
        self.sigmoid = nn.Sigmoid()
        self.loss = nn.BCELoss()

    def fwfm_layer(self, infeature):
        # get r(Fi, Fj)
        batch_size = infeature.shape[0]
        weight = self.weight.expand(batch_size, -1, -1, -1)

        fwfm_inter = list() # [batch_size, num_fields, emb_dim]
        for i in range(self.num_features - 1):
            for j in range(i + 1, self.num_features):
                Fi, Fj = self.feature2field[i], self.feature2field[j]
                fwfm_inter.append(infeature[:, i] * infeature[:, j] * weight[:, Fi, Fj])
        fwfm_inter = torch.stack(fwfm_inter, dim=1)
        fwfm_inter = torch.sum(fwfm_inter, dim=1) # [batch_size, emb_dim]
        fwfm_inter = self.dropout_layer(fwfm_inter)

        fwfm_output = torch.sum(fwfm_inter, dim=1, keepdim=True)  # [batch_size, 1]

        return fwfm_output

    def forward(self, interaction):
        idx = interaction + self.offsets
        fwfm_all_embeddings = self.token_embedding_table(idx)  # [batch_size, num_field, embed_dim]
        first_order = self.first_order_linear(idx).sum(dim=1)
        output = self.sigmoid(first_order + self.fwfm_layer(fwfm_all_embeddings))
        return output.squeeze()

    def calculate_loss(self, interaction, label):
        output = self.forward(interaction)
        return self.loss(output, label)


torch.manual_seed(0)
model = FwFM()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randint(0, 10, (64, 4))
label = (x[:, 0] > x[:, 1]).float()
for epoch in range(5):
    optimizer.zero_grad()
    loss = model.calculate_loss(x, label)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: train loss {loss.item():.4f}")
print("trainable parameters:", [n for n, _ in model.named_parameters()])
