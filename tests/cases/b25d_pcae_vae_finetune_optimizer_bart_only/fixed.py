"""PCAE (ImKeTT/PCAE) issue #5 "VAE_finetuning函数中的优化器设置存在问题" (the optimizer in VAE_finetuning is set up
wrong), https://github.com/ImKeTT/PCAE/issues/5: train.py wraps BART's encoder and decoder in a text VAE whose
pooler, posterior head `z_linear` (mean / log-variance) and latent-to-hidden `linear` live only in the VAE, then
builds `optimizer = AdamW(model.parameters(), ...)` from the BART model. Backward gives those VAE layers their
gradients, but no optimizer holds them, so the latent path never trains (the reporter saw the rec loss stay high,
KL collapse, and the same encoder output for every sentence). The author confirmed it and changed the line.
Fix (the repo's commit): `optimizer = AdamW(vae.parameters(), ...)`, which holds BART's weights too (the VAE wraps
them). BartForConditionalGeneration and the tokenizer are a small stand-in (random token ids); the VAE class is
vae.py cut to the fb_mode=1, zmanner="hidden" path; the line to change is the repo's training script."""
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss
from torch.optim import AdamW


# --- transformers BartForConditionalGeneration stand-in -------------------------------------
class BartConfig:
    vocab_size, d_model, hidden_size, pad_token_id = 50, 32, 32, 1


class BartEncoder(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.config, self.embed_tokens = config, embed_tokens
        self.layer = nn.Linear(config.d_model, config.d_model)

    def forward(self, input_ids, attention_mask=None):
        h = torch.tanh(self.layer(self.embed_tokens(input_ids)))
        return (h * attention_mask.unsqueeze(-1),)


class BartDecoder(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.config, self.embed_tokens = config, embed_tokens
        self.layer = nn.Linear(config.d_model, config.d_model)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None):
        h = self.embed_tokens(input_ids) + encoder_hidden_states.unsqueeze(1)
        return (torch.tanh(self.layer(h)),)


class BartModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.shared = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.encoder = BartEncoder(config, self.shared)
        self.decoder = BartDecoder(config, self.shared)


class BartForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = BartModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)


# --- vae.py (fb_mode=1, zmanner="hidden") ---------------------------------------------------
class BartPooler(nn.Module):
    def __init__(self, config):
        super(BartPooler, self).__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class VAE(nn.Module):
    """VAE with normal prior"""
    def __init__(self, encoder, decoder, args):
        super(VAE, self).__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.config = self.decoder.config
        self.pooler = BartPooler(self.config)
        self.shared = nn.Embedding(self.config.vocab_size, self.config.d_model, self.config.pad_token_id)
        self.args = args
        self.nz = args.dim_z
        self.z_linear = nn.Linear(self.config.hidden_size, 2 * self.nz, bias=False)
        self.linear = nn.Linear(self.nz, self.config.hidden_size, bias=False)
        self.lm_head = nn.Linear(self.config.d_model, self.config.vocab_size, bias=False)

    def reparameterize(self, mu, logvar, nsamples=1):
        batch_size, nz = mu.size()
        std = logvar.mul(0.5).exp()
        mu_expd = mu.unsqueeze(1).expand(batch_size, nsamples, nz)
        std_expd = std.unsqueeze(1).expand(batch_size, nsamples, nz)
        eps = torch.zeros_like(std_expd).normal_()
        return mu_expd + torch.mul(eps, std_expd)

    def forward(self, inputs, labels, attention_mask, decoder_inputs, beta=1.):
        encoder_outputs = self.encoder(inputs, attention_mask)
        pooled_hidden_fea = self.pooler(encoder_outputs[0])
        mu, logvar = self.z_linear(pooled_hidden_fea).chunk(2, -1)
        latent_z = self.reparameterize(mu, logvar, nsamples=1).squeeze(1)
        loss_kl = 0.5 * (mu.pow(2) + logvar.exp() - logvar - 1)
        kl_mask = (loss_kl > self.args.dim_target_kl).float()
        loss_kl = (kl_mask * loss_kl).sum(dim=1)
        z = self.linear(latent_z)
        decoder_outputs = self.decoder(input_ids=decoder_inputs, encoder_hidden_states=z)
        logits = self.lm_head(decoder_outputs[0])
        loss_rec = CrossEntropyLoss()(logits.view(-1, self.config.vocab_size), labels.view(-1))
        return loss_rec, loss_kl, loss_rec + beta * loss_kl


# --- train.py: VAE_finetuning ---------------------------------------------------------------
class args:
    dim_z, dim_target_kl, lr, train_epochs = 8, 0.1, 1e-3, 2


def VAE_finetuning(args):
    torch.random.manual_seed(0)
    model = BartForConditionalGeneration(BartConfig())
    vae = VAE(model.model.encoder, model.model.decoder, args)
    vae.shared = model.model.shared
    vae.lm_head = model.lm_head
    train_loader = [torch.randint(2, BartConfig.vocab_size, (8, 12)) for _ in range(3)]
    optimizer = AdamW(vae.parameters(), lr=args.lr)

    z_linear_before = vae.z_linear.weight.detach().clone()
    got_grad = False
    for e in range(args.train_epochs):
        vae.train()
        for batch_id, y in enumerate(train_loader):
            y_ids = y[:, :-1].contiguous()
            lm_labels = y[:, 1:].clone()
            attention_mask = torch.ones_like(y)
            loss_rec, loss_kl, loss = vae(y, labels=lm_labels, decoder_inputs=y_ids,
                                          attention_mask=attention_mask, beta=0.5)
            loss_rec, loss_kl, loss = loss_rec.mean(), loss_kl.mean(), loss.mean()
            loss.backward()
            got_grad = got_grad or vae.z_linear.weight.grad is not None
            optimizer.step()
            optimizer.zero_grad()
    print("z_linear got a gradient:", got_grad)
    print("z_linear changed:", not torch.equal(z_linear_before, vae.z_linear.weight.detach()))


torch.set_num_threads(1)
VAE_finetuning(args)
