"""imatif17/Prototype-Mean-Teacher issue #14, "Why detach prototypes in "prototype_all" branch?",
https://github.com/imatif17/Prototype-Mean-Teacher/issues/14: in the "prototype_all" branch the detector keeps
class prototypes (plain tensors made by build_prototype()) as running means of the box features of the target and
two source domains. It computes the prototype alignment loss, then calls self.prototype_t/s1/s2.detach_(), and only
after that builds the contrastive loss loss_c from self.prototype_s1. The trainer adds both to the detection loss
(t_losses += pro_loss * PROTO_WEIGHT; t_losses += contra_loss * CONTRA_WEIGHT). The reporter: "Doesn't the
computational graph of the model break after detach? ... the loss calculated from the prototype cannot be used to
update the model". The author: "Detach should come after loss_c loss, else the graph will be broken." (fixed twin)
Fix: detach the prototypes after loss_c is computed. Current PyTorch refuses a backward through a saved tensor that
was detached in place ("please use out-of-place `.detach()` instead"), so the prototypes are detached here by
rebinding them to their out-of-place .detach(), as that error asks; the order is the repo's. (The repo compares prototypes with .view(-1, 1), one coordinate
at a time, whose cosine is +-1 with zero derivative; here whole prototype rows are compared so the term has a
gradient to give.)"""
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NUM_CLASSES = 4
PROTO_WEIGHT, CONTRA_WEIGHT = 1.0, 1.0


class Prtotype_Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128))

    def forward(self, x):
        return self.net(x)


class DAobjTwoStagePseudoLabGeneralizedRCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, contra=True):
        super().__init__()
        self.num_classes = num_classes
        self.contra = contra
        self.backbone = nn.Sequential(nn.Linear(32, 64), nn.ReLU())  # backbone + ROI box head
        self.box_predictor = nn.Linear(64, num_classes)
        self.proto = Prtotype_Net()

    def build_prototype(self):
        self.prototype_s1 = torch.zeros((self.num_classes, 128))
        self.number_of_occurance_s1 = [0] * self.num_classes
        self.prototype_s2 = torch.zeros((self.num_classes, 128))
        self.number_of_occurance_s2 = [0] * self.num_classes
        self.prototype_t = torch.zeros((self.num_classes, 128))
        self.number_of_occurance_t = [0] * self.num_classes

    def update(self, prototype, counts, labels, box_features):
        for lab, pro in zip(labels.tolist(), box_features):
            prototype[lab] = ((prototype[lab] * counts[lab]) + pro) / (counts[lab] + 1)
            counts[lab] += 1

    def forward(self, batched_inputs, branch="supervised"):
        if branch == "supervised":
            x, y = batched_inputs
            return {"loss_cls": F.cross_entropy(self.box_predictor(self.backbone(x)), y)}
        (x_t, y_t), (x_s1, y_s1), (x_s2, y_s2) = batched_inputs
        self.update(self.prototype_t, self.number_of_occurance_t, y_t, self.proto(self.backbone(x_t)))
        self.update(self.prototype_s1, self.number_of_occurance_s1, y_s1, self.proto(self.backbone(x_s1)))
        self.update(self.prototype_s2, self.number_of_occurance_s2, y_s2, self.proto(self.backbone(x_s2)))
        loss_pro1 = F.cosine_similarity(self.prototype_s1, self.prototype_t).abs().mean()
        loss_pro2 = F.cosine_similarity(self.prototype_s2, self.prototype_t).abs().mean()
        loss_pro3 = F.cosine_similarity(self.prototype_s1, self.prototype_s2).abs().mean()
        loss = -(loss_pro1 + loss_pro2 + loss_pro3) / 3

        loss_c = 0
        if self.contra:
            for i, j in itertools.combinations(list(range(len(self.prototype_s1))), 2):
                loss_c += F.cosine_similarity(self.prototype_s1[i], self.prototype_s1[j], dim=0).abs()
            loss_c = loss_c / math.comb(len(self.prototype_s1), 2)
            self.prototype_s1 = self.prototype_s1.detach()
        self.prototype_t = self.prototype_t.detach()
        self.prototype_s1 = self.prototype_s1.detach()
        self.prototype_s2 = self.prototype_s2.detach()
        return loss, loss_c


def batch(n=8):
    return torch.randn(n, 32), torch.arange(n) % NUM_CLASSES


model = DAobjTwoStagePseudoLabGeneralizedRCNN()
model.build_prototype()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
data = [(batch(), batch(), batch(), batch()) for _ in range(3)]
proto_before = model.proto.net[2].weight.detach().clone()

for it, (label_data, target, source1, source2) in enumerate(data):
    record_dict = model(label_data, branch="supervised")
    t_losses = sum(record_dict.values())
    pro_loss, contra_loss = model((target, source1, source2), branch="prototype_all")
    t_losses += pro_loss * PROTO_WEIGHT
    t_losses += contra_loss * CONTRA_WEIGHT
    optimizer.zero_grad()
    t_losses.backward()
    optimizer.step()
    print(f"iter {it}: loss {t_losses.item():.4f} loss_contra {contra_loss.item():.4f} "
          f"loss_contra carries a gradient: {contra_loss.requires_grad}")

print("proto layer changed:", not torch.equal(proto_before, model.proto.net[2].weight))
