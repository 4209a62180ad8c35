"""R0oup1iao/Traffic-Transformer issue #4 "LearnedPositionalEncoding",
https://github.com/R0oup1iao/Traffic-Transformer/issues/4: the model's LearnedPositionalEncoding subclasses
nn.Embedding so that its weight is a learnable positional encoding (the author confirms in the thread that it is
meant to be "a learnable positional encoding implemented with nn.Embedding"), but forward() reads
`self.weight.data`, which is a plain tensor with no autograd history. The encoding is added to the input, the
transformer trains, and the positional table gets grad None at every step and never moves from its random init:
the model silently trains with a fixed random positional encoding.
Fix: use the parameter itself, `weight = self.weight.unsqueeze(1)`. The traffic data set is replaced by small
seeded random sequences; the rest of the model is a short encoder-only transformer like the repo's."""
import torch
import torch.nn as nn

torch.set_num_threads(1)


class LearnedPositionalEncoding(nn.Embedding):
    def __init__(self, d_model, dropout=0.1, max_len=500):
        super().__init__(max_len, d_model)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        weight = self.weight.unsqueeze(1)
        x = x + weight[:x.size(0), :]
        return self.dropout(x)


class TrafficTransformer(nn.Module):
    def __init__(self, in_dim=4, d_model=16, nhead=2, nlayers=1, max_len=32):
        super().__init__()
        self.input_proj = nn.Linear(in_dim, d_model)
        self.pos_encoder = LearnedPositionalEncoding(d_model, max_len=max_len)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.1)
        self.encoder = nn.TransformerEncoder(layer, nlayers)
        self.decoder = nn.Linear(d_model, 1)

    def forward(self, src):  # src: (seq, batch, in_dim)
        x = self.input_proj(src)
        x = self.pos_encoder(x)
        x = self.encoder(x)
        return self.decoder(x[-1])


torch.manual_seed(0)
model = TrafficTransformer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
data = [(torch.randn(12, 8, 4), torch.randn(8, 1)) for _ in range(4)]
pe_before = model.pos_encoder.weight.detach().clone()
model.train()
for epoch in range(2):
    for src, tgt in data:
        optimizer.zero_grad()
        out = model(src)
        loss = criterion(out, tgt)
        loss.backward()
        optimizer.step()
print("pos_encoder.weight.grad is None:", model.pos_encoder.weight.grad is None)
print("positional encoding changed:", not torch.equal(pe_before, model.pos_encoder.weight))
