"""Fixed twin of bug.py (orion-orion/FedDCSR#3): SelfAttention masks the padded positions out of place
(`seqs = seqs * ~timeline_mask.unsqueeze(-1)`), so the second encoder no longer overwrites the first one's input."""
import torch
import torch.nn as nn

hidden_size, num_blocks, num_heads = 8, 1, 2


class PointWiseFeedForward(nn.Module):
    def __init__(self, hidden_units):
        super().__init__()
        self.conv1 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.conv2 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)

    def forward(self, inputs):
        outputs = self.conv2(torch.relu(self.conv1(inputs.transpose(-1, -2))))
        outputs = outputs.transpose(-1, -2)
        outputs += inputs
        return outputs


class SelfAttention(nn.Module):
    def __init__(self, num_items):
        super().__init__()
        self.num_items = num_items
        self.attention_layernorms = nn.ModuleList([nn.LayerNorm(hidden_size, eps=1e-8) for _ in range(num_blocks)])
        self.attention_layers = nn.ModuleList([nn.MultiheadAttention(hidden_size, num_heads)
                                               for _ in range(num_blocks)])
        self.forward_layernorms = nn.ModuleList([nn.LayerNorm(hidden_size, eps=1e-8) for _ in range(num_blocks)])
        self.forward_layers = nn.ModuleList([PointWiseFeedForward(hidden_size) for _ in range(num_blocks)])
        self.last_layernorm = nn.LayerNorm(hidden_size, eps=1e-8)

    def forward(self, seqs, seqs_data):
        timeline_mask = torch.BoolTensor(seqs_data.cpu() == self.num_items)
        seqs = seqs * ~timeline_mask.unsqueeze(-1)
        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool))
        for i in range(len(self.attention_layers)):
            seqs = torch.transpose(seqs, 0, 1)
            Q = self.attention_layernorms[i](seqs)
            mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs, attn_mask=attention_mask)
            seqs = Q + mha_outputs
            seqs = torch.transpose(seqs, 0, 1)
            seqs = self.forward_layernorms[i](seqs)
            seqs = self.forward_layers[i](seqs)
            seqs = seqs * ~timeline_mask.unsqueeze(-1)
        return self.last_layernorm(seqs)


class Encoder(nn.Module):
    def __init__(self, num_items):
        super().__init__()
        self.encoder_mu = SelfAttention(num_items)
        self.encoder_logvar = SelfAttention(num_items)

    def forward(self, seqs, seqs_data):
        mu = self.encoder_mu(seqs, seqs_data)
        logvar = self.encoder_logvar(seqs, seqs_data)
        return mu, logvar


class VGSAN(nn.Module):
    def __init__(self, num_items, max_seq_len):
        super().__init__()
        self.item_emb = nn.Embedding(num_items + 1, hidden_size, padding_idx=num_items)
        self.pos_emb = nn.Embedding(max_seq_len, hidden_size)
        self.encoder = Encoder(num_items)
        self.linear = nn.Linear(hidden_size, num_items)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, seqs):
        seqs_emb = self.item_emb(seqs) * self.item_emb.embedding_dim ** 0.5
        position_ids = torch.arange(seqs.size(1)).unsqueeze(0).expand_as(seqs)
        seqs_emb = self.LayerNorm(seqs_emb + self.pos_emb(position_ids))
        mu, logvar = self.encoder(seqs_emb, seqs)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        return self.linear(z), mu, logvar


torch.manual_seed(0)
num_items, max_seq_len = 10, 5
model = VGSAN(num_items, max_seq_len)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
seqs = torch.tensor([[10, 10, 1, 2, 3], [10, 4, 5, 6, 7]])
targets = torch.tensor([[0, 0, 2, 3, 4], [0, 5, 6, 7, 8]])
for step in range(2):
    result, mu, logvar = model(seqs)
    kld = -0.5 * torch.mean(1 + logvar - mu ** 2 - logvar.exp())
    loss = nn.functional.cross_entropy(result.reshape(-1, num_items), targets.reshape(-1)) + kld
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
