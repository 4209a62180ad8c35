"""relogic cross-lingual adversarial training (Impavidity/relogic#6): the encoder is trained on the labeled source
language plus a generator loss that should fool a language discriminator on unlabeled target-language text. The
unlabeled batch has no label ids, so the model returns its output as in the test phase, detached; the generator loss
is computed and added, but it reaches the encoder only through that cut (the PR returns the features undetached)."""
import torch
import torch.nn.functional as F
from torch import nn


class MultitaskModel(nn.Module):
    def __init__(self, vocab=50, dim=16, n_labels=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.tagger = nn.Linear(2 * dim, n_labels)

    def forward(self, input_ids, label_ids=None):
        features, _ = self.encoder(self.embed(input_ids))
        logits = self.tagger(features)
        if label_ids is None:  # test phase
            return features.detach(), logits.detach()  # <- cut_term
        return features, F.cross_entropy(logits.flatten(0, 1), label_ids.flatten())


class Adversarial(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.discriminator = nn.Linear(dim, 1)
        self.optim = torch.optim.Adam(self.discriminator.parameters(), lr=1e-3)
        self.criterion = nn.BCEWithLogitsLoss()

    def loss(self, features, label):
        output = self.discriminator(features.mean(dim=1))
        return self.criterion(output, torch.full_like(output, label))

    def update(self, real_in, fake_in):
        self.optim.zero_grad()
        loss = 0.5 * (self.loss(real_in.detach(), 1.0) + self.loss(fake_in.detach(), 0.0))
        loss.backward()
        self.optim.step()

    def gen_loss(self, fake_in):
        return 0.1 * self.loss(fake_in, 1.0)


torch.manual_seed(0)
model, adversarial = MultitaskModel(), Adversarial()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
src_ids, src_labels = torch.randint(0, 50, (4, 7)), torch.randint(0, 5, (4, 7))
tgt_ids = torch.randint(0, 50, (4, 7))
for step in range(2):
    src_features, task_loss = model(src_ids, src_labels)
    tgt_features, _ = model(tgt_ids)
    adversarial.update(src_features, tgt_features)
    adv_loss = adversarial.gen_loss(tgt_features)
    optimizer.zero_grad()
    (task_loss + adv_loss).backward()
    optimizer.step()
    print(f"step {step}: task {task_loss.item():.4f} adv {adv_loss.item():.4f}")
