# "Maybe there is a bug in this line" -- yuval-alaluf/restyle-encoder issue #40
# https://github.com/yuval-alaluf/restyle-encoder/issues/40
# In training/coach_restyle_e4e.py, Coach.calc_loss first adds the encoder's adversarial
# loss (latent-code discriminator) to `loss`, then the ID-loss branch does
#     loss = loss_id * self.opts.id_lambda
# which rebinds `loss` and throws the adversarial term (and the delta regularisation) away.
# The encoder is still trained by the ID/L2/LPIPS terms, but never by the adversarial term,
# although 'encoder_discriminator_loss' is computed and logged every step.
# Fix (pushed by the author): `loss += loss_id * self.opts.id_lambda`.
# Miniature: tiny encoder / frozen decoder / latent discriminator / frozen "facenet" ID loss.
import torch
from torch import nn, autograd
import torch.nn.functional as F
from types import SimpleNamespace

torch.manual_seed(0)
STYLE_DIM = 16
N_LATENT = 4
IMG = 8


class Encoder(nn.Module):  # stands in for restyle_e4e_encoders.ProgressiveBackboneEncoder
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.PReLU(8), nn.AdaptiveAvgPool2d(2))
        self.styles = nn.Linear(8 * 4, N_LATENT * STYLE_DIM)

    def forward(self, x):
        h = self.body(x).flatten(1)
        return self.styles(h).view(-1, N_LATENT, STYLE_DIM)


class Generator(nn.Module):  # stands in for the pretrained StyleGAN2 decoder (frozen)
    def __init__(self):
        super().__init__()
        self.n_latent = N_LATENT
        self.style = nn.Sequential(nn.Linear(STYLE_DIM, STYLE_DIM), nn.LeakyReLU(0.2), nn.Linear(STYLE_DIM, STYLE_DIM))
        self.synth = nn.Linear(N_LATENT * STYLE_DIM, 3 * IMG * IMG)

    def get_latent(self, z):
        return self.style(z)

    def mean_latent(self, n):
        return self.style(torch.randn(n, STYLE_DIM)).mean(0, keepdim=True)

    def forward(self, codes):
        return torch.tanh(self.synth(codes.flatten(1))).view(-1, 3, IMG, IMG)


class e4e(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.opts = opts
        self.encoder = Encoder()
        self.decoder = Generator()
        self.latent_avg = None

    def forward(self, x, latent=None, return_latents=False):
        codes = self.encoder(x)
        if latent is not None:
            codes = codes + latent
        else:
            codes = codes + self.latent_avg.repeat(codes.shape[0], 1, 1)
        images = self.decoder(codes)
        if return_latents:
            return images, codes
        return images


class LatentCodesDiscriminator(nn.Module):
    def __init__(self, style_dim, n_mlp):
        super().__init__()
        layers = []
        for i in range(n_mlp - 1):
            layers += [nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2)]
        layers.append(nn.Linear(style_dim, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, w):
        return self.mlp(w)


class IDLoss(nn.Module):  # frozen face-recognition net, cosine-similarity loss
    def __init__(self):
        super().__init__()
        self.facenet = nn.Sequential(nn.Flatten(), nn.Linear(3 * IMG * IMG, 32))
        for p in self.facenet.parameters():
            p.requires_grad = False

    def extract_feats(self, x):
        return F.normalize(self.facenet(x), dim=1)

    def forward(self, y_hat, y, x):
        n = x.shape[0]
        x_feats = self.extract_feats(x)
        y_feats = self.extract_feats(y).detach()
        y_hat_feats = self.extract_feats(y_hat)
        loss, sim_improvement, id_logs = 0, 0, []
        for i in range(n):
            diff_target = y_hat_feats[i].dot(y_feats[i])
            diff_input = y_hat_feats[i].dot(x_feats[i])
            diff_views = y_feats[i].dot(x_feats[i])
            id_logs.append({'diff_target': float(diff_target), 'diff_input': float(diff_input), 'diff_views': float(diff_views)})
            loss += 1 - diff_target
            sim_improvement += float(diff_target) - float(diff_views)
        return loss / n, sim_improvement / n, id_logs


class Coach:
    def __init__(self, opts):
        self.opts = opts
        self.global_step = 0
        self.net = e4e(self.opts)
        if self.net.latent_avg is None:
            self.net.latent_avg = self.net.decoder.mean_latent(1000)[0].detach()
        self.avg_image = self.net.decoder(self.net.latent_avg.unsqueeze(0).repeat(1, N_LATENT, 1))[0].detach()
        self.id_loss = IDLoss().eval()
        self.optimizer = self.configure_optimizers()
        if self.opts.w_discriminator_lambda > 0:
            self.discriminator = LatentCodesDiscriminator(STYLE_DIM, 4)
            self.discriminator_optimizer = torch.optim.Adam(list(self.discriminator.parameters()), lr=opts.w_discriminator_lr)

    def configure_optimizers(self):
        params = list(self.net.encoder.parameters())
        self.requires_grad(self.net.decoder, False)
        return torch.optim.Adam(params, lr=self.opts.learning_rate)

    @staticmethod
    def requires_grad(model, flag=True):
        for p in model.parameters():
            p.requires_grad = flag

    def is_training_discriminator(self):
        return self.opts.w_discriminator_lambda > 0

    def is_progressive_training(self):
        return self.opts.progressive_steps is not None

    # ---------------- discriminator ----------------
    @staticmethod
    def discriminator_loss(real_pred, fake_pred, loss_dict):
        real_loss = F.softplus(-real_pred).mean()
        fake_loss = F.softplus(fake_pred).mean()
        loss_dict['d_real_loss'] = float(real_loss)
        loss_dict['d_fake_loss'] = float(fake_loss)
        return real_loss + fake_loss

    def sample_real_and_fake_latents(self, x):
        sample_z = torch.randn(self.opts.batch_size, STYLE_DIM)
        real_w = self.net.decoder.get_latent(sample_z)
        fake_w = self.net.encoder(x)
        if fake_w.ndim == 3:
            fake_w = fake_w[:, 0, :]
        return real_w, fake_w

    def train_discriminator(self, x):
        loss_dict = {}
        self.requires_grad(self.discriminator, True)
        with torch.no_grad():
            real_w, fake_w = self.sample_real_and_fake_latents(x)
        real_pred = self.discriminator(real_w)
        fake_pred = self.discriminator(fake_w)
        loss = self.discriminator_loss(real_pred, fake_pred, loss_dict)
        loss_dict['discriminator_loss'] = float(loss)
        self.discriminator_optimizer.zero_grad()
        loss.backward()
        self.discriminator_optimizer.step()
        self.requires_grad(self.discriminator, False)
        return loss_dict

    def compute_discriminator_loss(self, x):
        avg_image_for_batch = self.avg_image.unsqueeze(0).repeat(x.shape[0], 1, 1, 1)
        x_input = torch.cat([x, avg_image_for_batch], dim=1)
        disc_loss_dict = {}
        if self.is_training_discriminator():
            disc_loss_dict = self.train_discriminator(x_input)
        return disc_loss_dict

    # ---------------- encoder ----------------
    def calc_loss(self, x, y, y_hat, latent):
        loss_dict = {}
        loss = 0.0
        id_logs = None

        # Adversarial loss
        if self.is_training_discriminator():
            loss_disc = self.compute_adversarial_loss(latent, loss_dict)
            loss += self.opts.w_discriminator_lambda * loss_disc

        # delta regularization loss
        if self.opts.progressive_steps and self.net.encoder.progressive_stage.value != 18:
            total_delta_loss = self.compute_delta_regularization_loss(latent, loss_dict)
            loss += self.opts.delta_norm_lambda * total_delta_loss

        # similarity losses
        if self.opts.id_lambda > 0:
            loss_id, sim_improvement, id_logs = self.id_loss(y_hat, y, x)
            loss_dict['loss_id'] = float(loss_id)
            loss_dict['id_improve'] = float(sim_improvement)
            loss += loss_id * self.opts.id_lambda
        if self.opts.l2_lambda > 0:
            loss_l2 = F.mse_loss(y_hat, y)
            loss_dict['loss_l2'] = float(loss_l2)
            loss += loss_l2 * self.opts.l2_lambda

        loss_dict['loss'] = float(loss)
        return loss, loss_dict, id_logs

    def compute_adversarial_loss(self, latent, loss_dict):
        loss_disc = 0.
        dims_to_discriminate = list(range(self.net.decoder.n_latent))
        for i in dims_to_discriminate:
            w = latent[:, i, :]
            fake_pred = self.discriminator(w)
            loss_disc += F.softplus(-fake_pred).mean()
        loss_disc /= len(dims_to_discriminate)
        loss_dict['encoder_discriminator_loss'] = float(loss_disc)
        return loss_disc

    def perform_train_iteration_on_batch(self, x, y):
        y_hat, latent = None, None
        loss_dict, id_logs = None, None
        for iter in range(self.opts.n_iters_per_batch):
            if iter == 0:
                avg_image_for_batch = self.avg_image.unsqueeze(0).repeat(x.shape[0], 1, 1, 1)
                x_input = torch.cat([x, avg_image_for_batch], dim=1)
                y_hat, latent = self.net.forward(x_input, latent=None, return_latents=True)
            else:
                y_hat_clone = y_hat.clone().detach().requires_grad_(True)
                latent_clone = latent.clone().detach().requires_grad_(True)
                x_input = torch.cat([x, y_hat_clone], dim=1)
                y_hat, latent = self.net.forward(x_input, latent=latent_clone, return_latents=True)
            loss, loss_dict, id_logs = self.calc_loss(x, y, y_hat, latent)
            loss.backward()
        return loss_dict, id_logs

    def train(self):
        self.net.train()
        while self.global_step < self.opts.max_steps:
            x = torch.rand(self.opts.batch_size, 3, IMG, IMG) * 2 - 1
            y = x.clone()
            disc_loss_dict = self.compute_discriminator_loss(x)
            self.optimizer.zero_grad()
            encoder_loss_dict, id_logs = self.perform_train_iteration_on_batch(x, y)
            self.optimizer.step()
            loss_dict = {**disc_loss_dict, **encoder_loss_dict}
            self.global_step += 1
        return loss_dict


opts = SimpleNamespace(batch_size=4, learning_rate=1e-3, w_discriminator_lambda=0.1, w_discriminator_lr=2e-5,
                       progressive_steps=None, delta_norm_lambda=2e-4, id_lambda=0.1, l2_lambda=1.0,
                       n_iters_per_batch=2, max_steps=5)
coach = Coach(opts)
loss_dict = coach.train()
print({k: round(v, 4) for k, v in loss_dict.items()})
expected = (opts.w_discriminator_lambda * loss_dict['encoder_discriminator_loss']
            + opts.id_lambda * loss_dict['loss_id'] + opts.l2_lambda * loss_dict['loss_l2'])
print('encoder loss used for backward: %.4f   w_discriminator_lambda*adv + id + l2: %.4f' % (loss_dict['loss'], expected))
print('adversarial term reaches the encoder:', abs(loss_dict['loss'] - expected) < 1e-6)
