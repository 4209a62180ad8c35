"""ULMFiT (Howard & Ruder, 2018) three-stage transfer: LM fine-tuning, then classifier fine-tuning with
gradual unfreezing, discriminative learning rates and slanted triangular LR. Reduced from the paper's
scripts (https://github.com/fastai/fastai/tree/master/courses/dl2/imdb_scripts: finetune_lm.py,
train_clas.py) and the concat-pooling head of fastai.text; unfreezing is done the plain-PyTorch way
documented for ``Optimizer.add_param_group`` ("useful when fine tuning a pre-trained network as frozen
layers can be made trainable and added to the Optimizer as training progresses",
https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.add_param_group.html).

Patterns kept (each looks like a cut but is right):
- the classifier's encoder is filled with ``encoder.load_state_dict(lm_encoder_state)`` (fastai's
  ``learn.load_encoder('lm1_enc')``): weights are copied from the fine-tuned LM before any classifier
  optimizer exists.
- all encoder layers start with ``requires_grad_(False)`` and the optimizer initially holds only the head:
  the frozen layers still run forward; they are frozen on purpose until their stage.
- at each later stage one more layer group gets ``requires_grad_(True)`` and is added with
  ``optimizer.add_param_group`` at a discriminative lr ``lr / 2.6 ** depth``; by the last stage every
  parameter is trained.
- the slanted triangular schedule rewrites ``group['lr']`` from each group's own ``base_lr`` every step.
- the LM's decoder is trained in stage 1 and then discarded (the classifier never uses it); it is saved.
- concat pooling ``torch.cat([h[:, -1], h.max(1)[0], h.mean(1)], 1)`` discards the max indices only.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, vocab, emb=16, hid=24, n_layers=3):
        super().__init__()
        self.encoder = nn.Embedding(vocab, emb, padding_idx=0)
        self.rnns = nn.ModuleList([nn.LSTM(emb if l == 0 else hid, hid if l != n_layers - 1 else emb,
                                           batch_first=True) for l in range(n_layers)])
        self.emb_drop, self.hid_drop = nn.Dropout(0.1), nn.Dropout(0.1)

    def forward(self, x):
        h = self.emb_drop(self.encoder(x))
        for l, rnn in enumerate(self.rnns):
            h, _ = rnn(h)
            if l != len(self.rnns) - 1:
                h = self.hid_drop(h)
        return h


class LanguageModel(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.encoder = Encoder(vocab)
        self.decoder = nn.Linear(16, vocab)

    def forward(self, x):
        return self.decoder(self.encoder(x))


class PoolingLinearClassifier(nn.Module):
    def __init__(self, emb, n_classes):
        super().__init__()
        self.layers = nn.Sequential(nn.BatchNorm1d(3 * emb), nn.Dropout(0.2), nn.Linear(3 * emb, 16), nn.ReLU(),
                                    nn.BatchNorm1d(16), nn.Dropout(0.1), nn.Linear(16, n_classes))

    def forward(self, h):
        pooled = torch.cat([h[:, -1], h.max(1)[0], h.mean(1)], 1)
        return self.layers(pooled)


class TextClassifier(nn.Module):
    def __init__(self, vocab, n_classes):
        super().__init__()
        self.encoder = Encoder(vocab)
        self.head = PoolingLinearClassifier(16, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))

    def layer_groups(self):
        e = self.encoder
        return [[e.encoder, e.rnns[0]], [e.rnns[1]], [e.rnns[2]], [self.head]]


def stlr(t, T, cut_frac=0.3, ratio=8):
    cut = max(1, int(T * cut_frac))
    p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / cut_frac - 1))
    return (1 + p * (ratio - 1)) / ratio


def params_of(group):
    return [p for m in group for p in m.parameters()]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab, seq = 30, 12
    docs = torch.randint(1, vocab, (16, seq + 1))
    labels = (docs[:, :seq] < 15).float().mean(1).gt(0.5).long()

    # Stage 2: LM fine-tuning on the target corpus (stage 1, general-domain pretraining, is skipped)
    lm = LanguageModel(vocab)
    lm_opt = torch.optim.Adam(lm.parameters(), lr=3e-3, betas=(0.8, 0.99))
    lm.train()
    for step in range(4):
        logits = lm(docs[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), docs[:, 1:].reshape(-1))
        lm_opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 0.4)
        lm_opt.step()
        print(f"lm step {step} loss {loss.item():.6f}")
    lm_encoder_state = {k: v.clone() for k, v in lm.encoder.state_dict().items()}

    # Stage 3: classifier fine-tuning
    clf = TextClassifier(vocab, 2)
    clf.encoder.load_state_dict(lm_encoder_state)
    groups = clf.layer_groups()
    for g in groups[:-1]:
        for m in g:
            m.requires_grad_(False)
    lr, lrm = 1e-2, 2.6
    optimizer = torch.optim.Adam([{"params": params_of(groups[-1]), "lr": lr, "base_lr": lr}],
                                 betas=(0.7, 0.99), weight_decay=1e-7)
    stages = [1, 1, 1, 3]  # steps with the last 1, 2, 3 and all 4 groups unfrozen (freeze_to(-1), -2, -3, 0)
    clf.train()
    for stage, n_steps in enumerate(stages):
        if stage > 0:
            g = groups[-1 - stage]
            for m in g:
                m.requires_grad_(True)
            group_lr = lr / lrm ** stage
            optimizer.add_param_group({"params": params_of(g), "lr": group_lr, "base_lr": group_lr})
        for t in range(n_steps):
            for pg in optimizer.param_groups:
                pg["lr"] = pg["base_lr"] * stlr(t, n_steps)
            out = clf(docs[:, :seq])
            loss = F.cross_entropy(out, labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(clf.parameters(), 0.25)
            optimizer.step()
            print(f"stage {stage} ({len(optimizer.param_groups)} groups) step {t} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"language_model": lm.state_dict(), "classifier": clf.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
