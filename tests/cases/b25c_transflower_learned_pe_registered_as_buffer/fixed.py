"""guillefix/transflower-lightning issue #6 "LearnedPositionalEncoding",
https://github.com/guillefix/transflower-lightning/issues/6: the hand-written transformer's
`class LearnedPositionalEncoding(nn.Module): # emm this isn't learned lol` builds its table as
`pe = nn.Parameter(torch.zeros(input_length, 1, d_model))` and then stores it with
`self.register_buffer('pe', pe)`. A tensor given to register_buffer is a buffer, not a parameter, even when it is
an nn.Parameter: it is left out of model.parameters(), so the optimizer never holds it. Autograd still fills
`pe.grad` (it requires grad), but no step ever applies it, and the "learned" positional encoding stays all zeros
for the whole run; the issue asks what the author's comment means, and the comment is the answer.
Fix: register it as a parameter, `self.pe = pe` (nn.Module.__setattr__ registers an nn.Parameter). The rest is a
short stand-in for the repo's BasicTransformerModel (input projection, positional encoding, nn.TransformerEncoder,
output head) on seeded random sequences."""
import torch
import torch.nn as nn

torch.set_num_threads(1)


class LearnedPositionalEncoding(nn.Module): # emm this isn't learned lol
    def __init__(self, d_model, input_length, dropout=0.1, device=None):
        super(LearnedPositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = nn.Parameter((torch.zeros(input_length, 1, d_model)))
        self.pe = pe

    def forward(self, x):
        # print(x.shape)
        x = x + self.pe
        return self.dropout(x)


class BasicTransformerModel(nn.Module):
    def __init__(self, dout, dinp, nhead, dhid, nlayers, dropout=0.1, input_length=0, use_pos_emb=True):
        super(BasicTransformerModel, self).__init__()
        self.model_type = 'Transformer'
        self.encoder1 = nn.Linear(dinp, dhid)
        self.use_pos_emb = use_pos_emb
        if use_pos_emb:
            self.pos_encoder = LearnedPositionalEncoding(dhid, input_length, dropout)
        encoder_layers = nn.TransformerEncoderLayer(dhid, nhead, 2 * dhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.decoder = nn.Linear(dhid, dout)

    def forward(self, src):  # src: (input_length, batch, dinp)
        src = self.encoder1(src)
        if self.use_pos_emb:
            src = self.pos_encoder(src)
        output = self.transformer_encoder(src)
        return self.decoder(output)


torch.manual_seed(0)
model = BasicTransformerModel(dout=3, dinp=5, nhead=2, dhid=16, nlayers=1, input_length=10)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
batches = [(torch.randn(10, 4, 5), torch.randn(10, 4, 3)) for _ in range(4)]
for step in range(2):
    for src, tgt in batches:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(src), tgt)
        loss.backward()
        optimizer.step()
pe = model.pos_encoder.pe
print("pe is one of model.parameters():", any(p is pe for p in model.parameters()))
print("pe.grad is None:", pe.grad is None)
print("pe still all zeros:", bool((pe == 0).all()))
