"""DIRT-T / VADA (ozanciga/dirt-t#3, https://github.com/ozanciga/dirt-t/issues/3): vada_train.py crashes on
PyTorch 1.8 at loss_main.backward() with "RuntimeError: one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.cuda.FloatTensor [100, 1]], which is output 0 of TBackward, is at
version 2; expected version 1 instead."
Why: the domain loss of loss_main runs feats through feature_discriminator, so its graph saves the discriminator's
last Linear weight (100 -> 1, transposed). The discriminator is then updated first: optimizer_disc.step() writes
that weight in place (Adam), and loss_main.backward() finds the saved weight at a newer version.
Fix (Newbeeer in the thread): move the "Update discriminator" block (zero_grad / loss_disc.backward / step) up, right
after loss_disc is computed, before the domain loss runs the discriminator again.
Stand-ins: the conv Classifier and Discriminator are cut to a few Linear layers; VAT and EMA are left out."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super(Classifier, self).__init__()
        self.feature_extractor = nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU(negative_slope=0.1))
        self.classifier = nn.Linear(16, 10)

    def forward(self, x, track_bn=False):
        features = self.feature_extractor(x)
        logits = self.classifier(features)
        return features, logits


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(nn.Linear(16, 100), nn.ReLU(True), nn.Linear(100, 1))

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.disc(x).view(x.size(0), -1)


class ConditionalEntropyLoss(nn.Module):
    def forward(self, x):
        b = nn.functional.softmax(x, dim=1) * nn.functional.log_softmax(x, dim=1)
        return -1.0 * b.sum(dim=1).mean(dim=0)


torch.manual_seed(0)
feature_discriminator = Discriminator()
classifier = Classifier()
cent = ConditionalEntropyLoss()
xent = nn.CrossEntropyLoss(reduction='mean')
sigmoid_xent = nn.BCEWithLogitsLoss(reduction='mean')
optimizer_cls = torch.optim.Adam(classifier.parameters(), lr=1e-3, betas=(0.5, 0.999))
optimizer_disc = torch.optim.Adam(feature_discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
dw, cw, tw = 1e-2, 1, 1e-2
batches = [(torch.randn(8, 12), torch.randint(0, 10, (8,)), torch.randn(8, 12)) for _ in range(3)]
before = classifier.feature_extractor[0].weight.detach().clone()

for images_source, labels_source, images_target in batches:
    feats_source, pred_source = classifier(images_source)
    feats_target, pred_target = classifier(images_target, track_bn=True)

    # discriminator loss.
    real_logit_disc = feature_discriminator(feats_source.detach())
    fake_logit_disc = feature_discriminator(feats_target.detach())
    loss_disc = 0.5 * (sigmoid_xent(real_logit_disc, torch.ones_like(real_logit_disc)) +
                       sigmoid_xent(fake_logit_disc, torch.zeros_like(fake_logit_disc)))

    loss_src_class = xent(pred_source, labels_source)
    loss_trg_cent = cent(pred_target)

    # domain loss.
    real_logit = feature_discriminator(feats_source)
    fake_logit = feature_discriminator(feats_target)
    loss_domain = 0.5 * (sigmoid_xent(real_logit, torch.zeros_like(real_logit)) +
                         sigmoid_xent(fake_logit, torch.ones_like(fake_logit)))

    loss_main = dw * loss_domain + cw * loss_src_class + tw * loss_trg_cent

    # Update discriminator.
    optimizer_disc.zero_grad()
    loss_disc.backward()
    optimizer_disc.step()  # <- inplace_saved

    # Update classifier.
    optimizer_cls.zero_grad()
    loss_main.backward()
    optimizer_cls.step()
    print(f"loss_main={loss_main.item():.4f} loss_disc={loss_disc.item():.4f}")

print("feature extractor changed:", not torch.equal(before, classifier.feature_extractor[0].weight))
