# Port of matterport's Keras Mask R-CNN: set_trainable(layer_regex) mirrors Keras
# `layer.trainable = bool(re.fullmatch(regex, name))`, but the port only ever writes False.
import re
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.C1 = nn.Conv2d(3, 8, 3, padding=1)
        self.C2 = nn.Conv2d(8, 8, 3, padding=1)
        self.C3 = nn.Conv2d(8, 8, 3, padding=1)
        self.C4 = nn.Conv2d(8, 8, 3, padding=1)
        self.C5 = nn.Conv2d(8, 8, 3, padding=1)
        self.P5_conv1 = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        for c in (self.C1, self.C2, self.C3, self.C4, self.C5):
            x = torch.relu(c(x))
        return self.P5_conv1(x)


class MaskRCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fpn = FPN()
        self.rpn = nn.Conv2d(8, 4, 1)
        self.classifier = nn.Linear(8, 3)

    def forward(self, x):
        f = self.fpn(x)
        return self.rpn(f).mean(dim=(2, 3)), self.classifier(f.mean(dim=(2, 3)))

    def set_trainable(self, layer_regex):
        for param in self.named_parameters():
            layer_name = param[0]
            trainable = bool(re.fullmatch(layer_regex, layer_name))
            if not trainable:
                param[1].requires_grad = False
            else:
                param[1].requires_grad = True

    def train_model(self, layers, steps):
        layer_regex = {
            "heads": r"(fpn.P5\_.*)|(rpn.*)|(classifier.*)",
            "4+": r"(fpn.C4.*)|(fpn.C5.*)|(fpn.P5\_.*)|(rpn.*)|(classifier.*)",
            "all": ".*",
        }
        self.set_trainable(layer_regex[layers])
        trainables_wo_bn = [param for name, param in self.named_parameters()
                            if param.requires_grad and 'bn' not in name]
        trainables_only_bn = [param for name, param in self.named_parameters()
                              if param.requires_grad and 'bn' in name]
        optimizer = optim.SGD([{'params': trainables_wo_bn, 'weight_decay': 1e-4},
                               {'params': trainables_only_bn}], lr=0.01, momentum=0.9)
        for _ in range(steps):
            images = torch.randn(2, 3, 8, 8)
            rpn_target, cls_target = torch.randn(2, 4), torch.randint(0, 3, (2,))
            rpn_out, cls_out = self(images)
            loss = (rpn_out - rpn_target).pow(2).mean() + nn.functional.cross_entropy(cls_out, cls_target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


model = MaskRCNN()
# Stage 1: heads only
model.train_model("heads", steps=2)
# Stage 2: fine-tune ResNet stage 4 and up
before = model.fpn.C4.weight.detach().clone()
model.train_model("4+", steps=2)
print("C4 requires_grad:", model.fpn.C4.weight.requires_grad)
print("C4 grad is None:", model.fpn.C4.weight.grad is None)
print("C4 changed in stage 4+:", not torch.equal(before, model.fpn.C4.weight))
