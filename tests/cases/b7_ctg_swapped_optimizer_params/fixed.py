"""The fixed twin: trainer_G holds the decoder (generator) parameters and trainer_E the encoder's
(wiseodd/controlled-text-generation#15), so the VAE loss trains the encoder."""
import torch
import torch.nn.functional as F
from torch import nn


class RNN_VAE(nn.Module):
    def __init__(self, vocab=20, emb=8, z_dim=4, c_dim=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.encoder = nn.GRU(emb, 16, batch_first=True)
        self.q_mu, self.q_logvar = nn.Linear(16, z_dim), nn.Linear(16, z_dim)
        self.decoder = nn.GRU(emb + z_dim + c_dim, z_dim + c_dim, batch_first=True)
        self.decoder_fc = nn.Linear(z_dim + c_dim, vocab)
        self.encoder_params = list(self.encoder.parameters()) + list(self.q_mu.parameters()) + list(self.q_logvar.parameters())
        self.decoder_params = list(self.decoder.parameters()) + list(self.decoder_fc.parameters())

    def encode(self, tokens):
        _, h = self.encoder(self.embed(tokens))
        return self.q_mu(h[-1]), self.q_logvar(h[-1])

    def decode(self, tokens, z, c):
        zc = torch.cat([z, c], -1)
        inputs = torch.cat([self.embed(tokens), zc.unsqueeze(1).expand(-1, tokens.size(1), -1)], -1)
        out, _ = self.decoder(inputs, zc.unsqueeze(0))
        return self.decoder_fc(out)


torch.manual_seed(0)
model = RNN_VAE()
lr = 1e-2
trainer_G = torch.optim.Adam(model.decoder_params, lr=lr)
trainer_E = torch.optim.Adam(model.encoder_params, lr=lr)
tokens = torch.randint(0, 20, (16, 7))
encoder_before = model.q_mu.weight.detach().clone()
for it in range(5):
    c = F.one_hot(torch.randint(0, 2, (16,)), 2).float()
    # generator step: sentences decoded from the prior
    z_prior = torch.randn(16, 4)
    logits = model.decode(tokens, z_prior, c)
    loss_G = F.cross_entropy(logits.reshape(-1, 20), tokens.reshape(-1))
    trainer_G.zero_grad()
    loss_G.backward()
    trainer_G.step()
    # encoder step: the VAE loss
    mu, logvar = model.encode(tokens)
    z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    recon = F.cross_entropy(model.decode(tokens, z, c).reshape(-1, 20), tokens.reshape(-1))
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1).mean()
    loss_E = recon + kl
    trainer_E.zero_grad()
    loss_E.backward()
    trainer_E.step()
print(f"loss_E {loss_E.item():.3f}; encoder changed: {not torch.equal(encoder_before, model.q_mu.weight)}")
