# RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation
# https://github.com/ozanciga/dirt-t/issues/3
# VADA training (vada_train.py): the domain loss `loss_domain` for the classifier is computed through
# feature_discriminator(feats_*) BEFORE the discriminator is updated. optimizer_disc.step() then modifies the
# discriminator weights in place, and loss_main.backward() fails because the saved weight (TBackward of the
# last nn.Linear(100, 1)) is at version 2 instead of 1.
# Fix (from the thread, issue closed): move the "Update discriminator" block up, right after loss_disc is
# computed, so the discriminator is stepped before its weights are used to build loss_domain.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self, n_features=8, classes=10):
        super(Classifier, self).__init__()
        self.feature_extractor = nn.Sequential(
            nn.Conv2d(3, n_features, 3, 1, 1),
            nn.BatchNorm2d(n_features),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.MaxPool2d(2),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Conv2d(n_features, n_features, 3, 1, 1),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(n_features, classes, 1),
        )

    def forward(self, x, track_bn=False):
        features = self.feature_extractor(x)
        logits = self.classifier(features)
        return features, logits.view(x.size(0), 10)


class Discriminator(nn.Module):
    def __init__(self, n_features=8):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(
            nn.Linear(n_features * 8 * 8, 100),
            nn.ReLU(True),
            nn.Linear(100, 1),
        )

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.disc(x).view(x.size(0), -1)


class ConditionalEntropyLoss(nn.Module):
    def forward(self, x):
        b = F.softmax(x, dim=1) * F.log_softmax(x, dim=1)
        b = b.sum(dim=1)
        return -1.0 * b.mean(dim=0)


feature_discriminator = Discriminator()
classifier = Classifier()

cent = ConditionalEntropyLoss()
xent = nn.CrossEntropyLoss(reduction='mean')
sigmoid_xent = nn.BCEWithLogitsLoss(reduction='mean')

optimizer_cls = torch.optim.Adam(classifier.parameters(), lr=1e-3, betas=(0.5, 0.999))
optimizer_disc = torch.optim.Adam(feature_discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))

dw, cw, tw = 1e-2, 1, 1e-2

for it in range(2):
    images_source = torch.randn(4, 3, 32, 32)
    labels_source = torch.randint(0, 10, (4,))
    images_target = torch.randn(4, 3, 32, 32)

    feats_source, pred_source = classifier(images_source)
    feats_target, pred_target = classifier(images_target, track_bn=True)

    # discriminator loss.
    real_logit_disc = feature_discriminator(feats_source.detach())
    fake_logit_disc = feature_discriminator(feats_target.detach())
    loss_disc = 0.5 * (
        sigmoid_xent(real_logit_disc, torch.ones_like(real_logit_disc)) +
        sigmoid_xent(fake_logit_disc, torch.zeros_like(fake_logit_disc))
    )

    # Update discriminator.
    optimizer_disc.zero_grad()
    loss_disc.backward()
    optimizer_disc.step()

    # classifier losses.
    loss_src_class = xent(pred_source, labels_source)
    loss_trg_cent = cent(pred_target)

    # domain loss.
    real_logit = feature_discriminator(feats_source)
    fake_logit = feature_discriminator(feats_target)
    loss_domain = 0.5 * (
        sigmoid_xent(real_logit, torch.zeros_like(real_logit)) +
        sigmoid_xent(fake_logit, torch.ones_like(fake_logit))
    )

    loss_main = dw * loss_domain + cw * loss_src_class + tw * loss_trg_cent

    # Update classifier.
    optimizer_cls.zero_grad()
    loss_main.backward()
    optimizer_cls.step()

    print('it', it, 'loss_main', loss_main.item(), 'loss_disc', loss_disc.item())
