"""Min_Max_Similarity (AngeLouCN/Min_Max_Similarity) issue #7 "Question about the projector backpropogation",
https://github.com/AngeLouCN/Min_Max_Similarity/issues/7: in train_mms.py the two segmentation networks are trained
with a supervised loss, a disagreement loss and two contrastive losses computed on the outputs of
`projector_1/projector_2` (unlabelled branch) and `classifier_1/classifier_2` (labelled branch). The optimizer is
built from `params = list(self.model_1.parameters()) + list(self.model_2.parameters())` only, so the projectors and
classifiers receive gradients at every `seg_loss.backward()` but are never stepped: they keep their random
initialisation for the whole run. Fix: add their parameters to `params`. The U-Nets are small stand-ins, ConLoss and
contrastive_loss_sup are short InfoNCE stand-ins, and the polyp images and masks are random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


def conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class preUnet(nn.Module):  # stand-in for model/pretrained_unet.py
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(conv(3, 8), conv(8, 8), nn.Conv2d(8, 1, 1))

    def forward(self, x):
        return self.body(x)


class projectors(nn.Module):  # model/projector.py
    def __init__(self, input_nc=1, ndf=8):
        super().__init__()
        self.pool = nn.MaxPool2d(2, 2)
        self.conv_1, self.conv_2 = conv(input_nc, ndf), conv(ndf, ndf * 2)
        self.final = nn.Conv2d(ndf * 2, ndf * 2, kernel_size=1)

    def forward(self, input):
        return self.final(self.pool(self.conv_2(self.pool(self.conv_1(input)))))


class classifier(projectors):
    pass


def info_nce(q, k, t=0.5):  # ConLoss / contrastive_loss_sup stand-in
    q, k = F.normalize(q.flatten(1), dim=1), F.normalize(k.flatten(1), dim=1)
    return F.cross_entropy(q @ k.t() / t, torch.arange(len(q)))


model_1, model_2 = preUnet(), preUnet()
projector_1, projector_2 = projectors(), projectors()
classifier_1, classifier_2 = classifier(), classifier()

params = list(model_1.parameters()) + list(model_2.parameters()) + list(projector_1.parameters()) + \
    list(projector_2.parameters()) + list(classifier_1.parameters()) + list(classifier_2.parameters())
optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=0.0001)
proj_before = projector_1.final.weight.detach().clone()

for i in range(4):
    inputs_S1, inputs_S2, inputs_U = torch.randn(4, 3, 32, 32), torch.randn(4, 3, 32, 32), torch.randn(4, 3, 32, 32)
    labels_S1, labels_S2 = (torch.rand(4, 1, 32, 32) > 0.5).float(), (torch.rand(4, 1, 32, 32) > 0.5).float()
    optimizer.zero_grad()
    prediction_1 = model_1(inputs_S1)
    feat_1 = model_1(inputs_U)
    prediction_2 = model_2(inputs_S2)
    feat_2 = model_2(inputs_U)
    feat_q, feat_k = projector_1(feat_1), projector_2(feat_2)
    feat_l_q, feat_l_k = classifier_1(prediction_1), classifier_2(prediction_2)
    Loss_sup = F.binary_cross_entropy_with_logits(prediction_1, labels_S1) + \
        F.binary_cross_entropy_with_logits(prediction_2, labels_S2)
    Loss_diff = F.mse_loss(torch.sigmoid(feat_1), torch.sigmoid(feat_2))
    Loss_contrast = info_nce(feat_q, feat_k)
    Loss_contrast_2 = info_nce(feat_l_q, feat_l_k)
    seg_loss = 0.25 * Loss_sup + 0.25 * Loss_diff + 0.25 * Loss_contrast + 0.25 * Loss_contrast_2
    seg_loss.backward()
    optimizer.step()

print("seg_loss:", round(seg_loss.item(), 4))
print("projector_1.final.weight.grad is None:", projector_1.final.weight.grad is None)
print("projector_1 changed:", not torch.equal(proj_before, projector_1.final.weight))
