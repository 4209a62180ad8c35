"""StyleTTS2 (yl4579/StyleTTS2) PR #75, "Continued fix of SLM training (see #74)",
https://github.com/yl4579/StyleTTS2/pull/75: in the SLM adversarial stage of train_finetune.py the generator's
loss_gen_lm.backward() runs, then `if d_loss_slm != 0:` (every skip_update iterations) the WavLM discriminator
step calls optimizer.zero_grad() -- the MultiOptimizer zeroes every module's optimizer -- runs
d_loss_slm.backward() (on y_pred.detach(), so nothing reaches the generator) and steps 'wd'; only then come the
gradient scaling and optimizer.step('bert_encoder' / 'predictor' / ...). On those iterations the generator steps
find no gradient and the SLM generator loss trains nothing. PR #75, item 1: "Move generator related
optimizer.steps up, so they won't get zeroed out when 'd_loss_slm != 0'".
Tiny stand-ins: Linear bert_encoder / predictor / decoder, a frozen "WavLM" projection and the trainable 'wd'
head of WavLMLoss (LSGAN); PL-BERT, the diffusion sampler and the duration modelling are left out."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MultiOptimizer:
    def __init__(self, optimizers):
        self.optimizers, self.keys = optimizers, list(optimizers.keys())

    def step(self, key):
        self.optimizers[key].step()

    def zero_grad(self):
        for key in self.keys:
            self.optimizers[key].zero_grad()


class WavLMLoss(nn.Module):
    def __init__(self, wavlm, wd):
        super().__init__()
        self.wavlm, self.wd = wavlm, wd

    def forward(self, wav, y_rec):  # feature-matching loss_lm through the frozen WavLM
        with torch.no_grad():
            wav_emb = self.wavlm(wav)
        return F.l1_loss(self.wavlm(y_rec), wav_emb)

    def generator(self, y_rec):
        y_d_gs = self.wd(self.wavlm(y_rec))
        return torch.mean((1 - y_d_gs) ** 2)

    def discriminator(self, wav, y_rec):
        with torch.no_grad():
            wav_emb, rec_emb = self.wavlm(wav), self.wavlm(y_rec)
        return torch.mean((1 - self.wd(wav_emb)) ** 2) + torch.mean(self.wd(rec_emb) ** 2)


model = nn.ModuleDict({"bert_encoder": nn.Linear(8, 8), "predictor": nn.Linear(8, 8), "decoder": nn.Linear(8, 16),
                       "wd": nn.Linear(12, 1)})
wavlm = nn.Linear(16, 12).requires_grad_(False)  # pretrained WavLM, frozen
wl = WavLMLoss(wavlm, model.wd)
optimizer = MultiOptimizer({key: torch.optim.AdamW(model[key].parameters(), lr=1e-3) for key in model})
skip_update, slm_scale = 2, 0.01


def slmadv(iters, texts, wav):
    y_pred = model.decoder(model.predictor(model.bert_encoder(texts)))
    if (iters + 1) % skip_update == 0:
        d_loss = wl.discriminator(wav.detach(), y_pred.detach()).mean()
    else:
        d_loss = 0
    gen_loss = wl.generator(y_pred).mean()
    return d_loss, gen_loss, y_pred.detach()


for i in range(4):
    texts, wav = torch.randn(4, 8), torch.randn(4, 16)
    y_rec = model.decoder(model.predictor(model.bert_encoder(texts)))
    g_loss = F.l1_loss(y_rec, wav) + wl(wav.detach(), y_rec)  # loss_mel stand-in + loss_lm
    optimizer.zero_grad()
    g_loss.backward()
    for key in ("bert_encoder", "predictor", "decoder"):
        optimizer.step(key)

    d_loss_slm, loss_gen_lm, y_pred = slmadv(i, texts, wav)
    before = model.predictor.weight.detach().clone()
    # SLM generator loss
    optimizer.zero_grad()
    loss_gen_lm.backward()
    for p in model.predictor.parameters():  # gradient scaling
        if p.grad is not None:
            p.grad *= slm_scale
    optimizer.step('bert_encoder')
    optimizer.step('predictor')
    # SLM discriminator loss
    if d_loss_slm != 0:
        optimizer.zero_grad()
        d_loss_slm.backward(retain_graph=True)
        optimizer.step('wd')
    print(f"iter {i}: d_loss_slm != 0: {bool(d_loss_slm != 0)}, "
          f"SLM generator step moved predictor: {not torch.equal(before, model.predictor.weight)}")
