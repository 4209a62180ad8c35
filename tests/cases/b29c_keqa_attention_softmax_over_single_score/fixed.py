"""DEEP-PolyU/KEQA_WSDM19#2 "Attention Weight Bug in Embedding", https://github.com/DEEP-PolyU/KEQA_WSDM19/issues/2:
KEQA's EmbedVector (embedding.py) runs a bidirectional LSTM over the question, then a hand-written attention:
`attn_weights = F.softmax(self.attn(torch.cat((x, outputs), 1)), dim=1)`. self.attn ends in Linear(hidden, 1),
so its output is (seq_len*batch_size, 1) and the softmax over dim=1 normalises a single score: every weight is
1.0 whatever the input. The reporter: "which results in all softmax results to be 1.0"; a softmax over one
value is constant, so self.attn gets an all-zero gradient and never learns. The author agreed: "It should be
attn_weights = F.softmax(self.attn(torch.cat((x, outputs), 1)), dim=0)". Training follows train_entity.py (MSE to
the entity's knowledge-graph embedding, Adam, clip_grad_norm_); the data are random token ids and random target
embeddings, sizes shrunk."""
import types
import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbedVector(nn.Module):
    def __init__(self, config):
        super(EmbedVector, self).__init__()
        self.config = config
        target_size = config.label
        self.embed = nn.Embedding(config.words_num, config.words_dim)
        if config.train_embed == False:
            self.embed.weight.requires_grad = False
        self.lstm = nn.LSTM(input_size=config.words_dim, hidden_size=config.hidden_size,
                            num_layers=config.num_layer, dropout=config.rnn_dropout, bidirectional=True)
        self.dropout = nn.Dropout(p=config.rnn_fc_dropout)
        self.nonlinear = nn.Tanh()
        self.attn = nn.Sequential(
            nn.Linear(config.hidden_size * 2 + config.words_dim, config.hidden_size),
            self.nonlinear,
            nn.Linear(config.hidden_size, 1)
        )
        self.hidden2tag = nn.Sequential(
            nn.Linear(config.hidden_size * 2 + config.words_dim, config.hidden_size * 2),
            nn.BatchNorm1d(config.hidden_size * 2),
            self.nonlinear,
            self.dropout,
            nn.Linear(config.hidden_size * 2, target_size)
        )

    def forward(self, x):
        # x = (sequence length, batch_size, dimension of embedding)
        text = x.text
        x = self.embed(text)
        num_word, batch_size, words_dim = x.size()
        outputs, (ht, ct) = self.lstm(x)
        outputs = outputs.view(-1, outputs.size(2))
        x = x.view(-1, words_dim)
        attn_weights = F.softmax(self.attn(torch.cat((x, outputs), 1)), dim=0)
        attn_applied = torch.bmm(torch.diag(attn_weights[:, 0]).unsqueeze(0), outputs.unsqueeze(0))
        outputs = torch.cat((x, attn_applied.squeeze(0)), 1)
        tags = self.hidden2tag(outputs).view(num_word, batch_size, -1)
        scores = nn.functional.normalize(torch.mean(tags, dim=0), dim=1)
        return scores


torch.manual_seed(3435)
config = types.SimpleNamespace(label=12, words_num=40, words_dim=10, train_embed=True, num_layer=2,
                               rnn_dropout=0.3, rnn_fc_dropout=0.3, hidden_size=8, lr=0.0002,
                               weight_decay=0, clip_gradient=0.6)
model = EmbedVector(config)
entities_emb = F.normalize(torch.randn(20, config.label), dim=1)
batches = [types.SimpleNamespace(text=torch.randint(0, 40, (7, 4)), mid=torch.randint(0, 20, (4,)))
           for _ in range(4)]

parameter = filter(lambda p: p.requires_grad, model.parameters())
optimizer = torch.optim.Adam(parameter, lr=config.lr, weight_decay=config.weight_decay)
criterion = nn.MSELoss()
attn_before = model.attn[0].weight.detach().clone()
for epoch in range(2):
    for batch in batches:
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(batch), entities_emb[batch.mid, :])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_gradient)
        optimizer.step()

print("attn[0].weight grad abs max: %.3e" % model.attn[0].weight.grad.abs().max().item())
print("attn[0].weight changed:", not torch.equal(attn_before, model.attn[0].weight))
print("lstm weight grad abs max: %.3e" % model.lstm.weight_ih_l0.grad.abs().max().item())
