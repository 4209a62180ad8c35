"""PCAE (ImKeTT/PCAE#5, https://github.com/ImKeTT/PCAE/issues/5): in train.py's VAE_finetuning the BART VAE
does not converge; the reporter notices that the VAE's own layers (z_linear, which makes the mean and log-variance
of the latent) are never optimized. The maintainer confirms ("you are right!") and updates train.py.
Why: the optimizer is built from model.parameters(), i.e. the BartForConditionalGeneration whose encoder, decoder,
shared embedding and lm_head the VAE borrows; the VAE's pooler, z_linear and linear (latent -> decoder) get
gradients from loss.backward() but are in no optimizer, so they keep their random initial values.
Fix: optimizer = AdamW(vae.parameters(), ...)."""
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss
from types import SimpleNamespace


class BartForConditionalGeneration(nn.Module):
    """transformers' BartForConditionalGeneration in short: .model.{shared, encoder, decoder} and .lm_head."""
    def __init__(self, vocab_size=40, d_model=16):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=vocab_size, d_model=d_model, hidden_size=d_model, decoder_layers=1)
        self.model = nn.Module()
        self.model.shared = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.model.encoder = BartEncoder(self.model.shared, self.config)
        self.model.decoder = BartDecoder(self.model.shared, self.config)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)


class BartEncoder(nn.Module):
    def __init__(self, embed_tokens, config):
        super().__init__()
        self.config, self.embed_tokens = config, embed_tokens
        self.layer = nn.Linear(config.d_model, config.d_model)

    def forward(self, input_ids, attention_mask=None):
        return (torch.tanh(self.layer(self.embed_tokens(input_ids))),)


class BartDecoder(nn.Module):
    def __init__(self, embed_tokens, config):
        super().__init__()
        self.config, self.embed_tokens = config, embed_tokens
        self.layer = nn.Linear(config.d_model, config.d_model)
        self.cross = nn.Linear(config.d_model, config.d_model)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None):
        h = self.embed_tokens(input_ids) + self.cross(encoder_hidden_states).unsqueeze(1)
        return (torch.tanh(self.layer(h)),)


class BartPooler(nn.Module):
    def __init__(self, config):
        super(BartPooler, self).__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        pooled_output = self.activation(pooled_output)
        return pooled_output


class VAE(nn.Module):
    """VAE with normal prior"""
    def __init__(self, encoder, decoder, tokenizer, args, device):
        super(VAE, self).__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.tokenizer = tokenizer
        self.config = self.decoder.config
        self.pooler = BartPooler(self.config)

        padding_idx, vocab_size = tokenizer.pad_token_id, self.config.vocab_size
        self.vocab_size = vocab_size
        self.shared = nn.Embedding(self.vocab_size, self.config.d_model, padding_idx)

        self.args = args
        self.nz = args.dim_z
        self.z_linear = nn.Linear(self.config.hidden_size, 2 * self.nz, bias=False)
        self.pad_token_id = padding_idx
        self.linear = nn.Linear(self.nz, self.config.hidden_size, bias=False)

        self.register_buffer("final_logits_bias", torch.zeros((1, self.shared.num_embeddings)))
        self.lm_head = nn.Linear(self.decoder.config.d_model, self.shared.num_embeddings, bias=False)

    def reparameterize(self, mu, logvar, nsamples=1):
        batch_size, nz = mu.size()
        std = logvar.mul(0.5).exp()
        mu_expd = mu.unsqueeze(1).expand(batch_size, nsamples, nz)
        std_expd = std.unsqueeze(1).expand(batch_size, nsamples, nz)
        eps = torch.zeros_like(std_expd).normal_()
        return mu_expd + torch.mul(eps, std_expd)

    def cond_gen(self, logits, labels):
        loss_fct = CrossEntropyLoss()
        masked_lm_loss = loss_fct(logits.view(-1, self.config.vocab_size), labels.view(-1))
        return masked_lm_loss

    def forward(self, inputs, labels, attention_mask, decoder_inputs, decoder_inputs_mask=None, beta=1.):
        encoder_outputs = self.encoder(inputs, attention_mask)
        pooled_hidden_fea = self.pooler(encoder_outputs[0])

        # fb_mode == 1, zmanner == "hidden"
        mu, logvar = self.z_linear(pooled_hidden_fea).chunk(2, -1)
        latent_z = self.reparameterize(mu, logvar, nsamples=1)
        latent_z = latent_z.squeeze(1)
        loss_kl = 0.5 * (mu.pow(2) + logvar.exp() - logvar - 1)
        kl_mask = (loss_kl > self.args.dim_target_kl).float()
        loss_kl = (kl_mask * loss_kl).sum(dim=1)

        z = self.linear(latent_z)
        decoder_outputs = self.decoder(input_ids=decoder_inputs, attention_mask=decoder_inputs_mask,
                                       encoder_hidden_states=z)
        logits = self.lm_head(decoder_outputs[0])
        loss_rec = self.cond_gen(logits, labels)

        loss = loss_rec + beta * loss_kl
        return loss_rec, loss_kl, loss


torch.manual_seed(0)
args = SimpleNamespace(dim_z=8, dim_target_kl=0.1, lr=1e-3, train_epochs=1)
tokenizer = SimpleNamespace(pad_token_id=1, eos_token_id=2, bos_token_id=0)
device = torch.device("cpu")
model = BartForConditionalGeneration()
vae = VAE(model.model.encoder, model.model.decoder, tokenizer, args, device)
vae.shared = model.model.shared
vae.lm_head = model.lm_head
# transformers.AdamW(..., correct_bias=True, no_deprecation_warning=True) behaves as torch.optim.AdamW here
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)  # <- optimizer

before = vae.z_linear.weight.detach().clone()
vae.train()
for batch_id in range(5):
    y = torch.randint(3, 40, (4, 7))
    y_ids = y[:, :-1].contiguous()
    lm_labels = y[:, 1:].clone()
    loss_rec, loss_kl, loss = vae(y, labels=lm_labels, decoder_inputs=y_ids,
                                  attention_mask=torch.ones_like(y), beta=0.5)
    loss_rec, loss_kl, loss = loss_rec.mean(), loss_kl.mean(), loss.mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"loss={loss.item():.4f} rec={loss_rec.item():.4f} kl={loss_kl.item():.4f}")
print("z_linear changed:", not torch.equal(before, vae.z_linear.weight))
