"""SiamCAR (ohhhyeahhh/SiamCAR) issue #18 "about trainable_params",
https://github.com/ohhhyeahhh/SiamCAR/issues/18: ModelBuilder has an extra layer
`self.down = nn.ConvTranspose2d(256 * 3, 256, 1, 1)` that fuses the three depthwise cross-correlation maps
before the CAR head, but build_opt_lr in tools/train.py puts only the (filtered) backbone, the neck and
car_head into the SGD param groups. self.down gets a gradient at every step and is never updated. The authors
confirmed it ("we did forget to put the parameters of self.down into the optimizer").
Fix: add a param group for model.down.parameters().
Stand-ins: a torchvision Bottleneck ResNet with one block a stage (no weights, dilated layer3/layer4 like the
atrous ResNet-50) read through
create_feature_extractor, smaller channels, a two-layer CAR head and a short loss; random template/search crops."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.resnet import ResNet, Bottleneck
from torchvision.models.feature_extraction import create_feature_extractor

torch.manual_seed(0)
torch.set_num_threads(1)
BASE_LR, LAYERS_LR, TRAIN_EPOCH, C = 0.005, 0.1, 10, 32


def xcorr_depthwise(x, kernel):
    batch, channel = kernel.size(0), kernel.size(1)
    x = x.view(1, batch * channel, x.size(2), x.size(3))
    kernel = kernel.view(batch * channel, 1, kernel.size(2), kernel.size(3))
    out = F.conv2d(x, kernel, groups=batch * channel)
    return out.view(batch, channel, out.size(2), out.size(3))


class AdjustAllLayer(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.downsample = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels)) for c in in_channels)

    def forward(self, features):
        out = []
        for f, down in zip(features, self.downsample):
            f = down(f)
            if f.size(3) < 8:  # crop the template centre
                f = f[:, :, 1:5, 1:5]
            out.append(f)
        return out


class CARHead(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.cls_tower = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.GroupNorm(8, in_channels), nn.ReLU())
        self.bbox_tower = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.GroupNorm(8, in_channels), nn.ReLU())
        self.cls_logits = nn.Conv2d(in_channels, 2, 3, padding=1)
        self.centerness = nn.Conv2d(in_channels, 1, 3, padding=1)
        self.bbox_pred = nn.Conv2d(in_channels, 4, 3, padding=1)

    def forward(self, x):
        cls_tower = self.cls_tower(x)
        return self.cls_logits(cls_tower), torch.exp(self.bbox_pred(self.bbox_tower(x))), self.centerness(cls_tower)


class ModelBuilder(nn.Module):
    def __init__(self):
        super().__init__()
        body = ResNet(Bottleneck, [1, 1, 1, 1], replace_stride_with_dilation=[False, True, True])  # atrous ResNet-50 stand-in
        self.backbone = create_feature_extractor(body, return_nodes={"layer2": "p2", "layer3": "p3", "layer4": "p4"})
        self.neck = AdjustAllLayer([512, 1024, 2048], C)
        self.car_head = CARHead(C)
        self.down = nn.ConvTranspose2d(C * 3, C, 1, 1)

    def forward(self, data):
        zf = self.neck(list(self.backbone(data["template"]).values()))
        xf = self.neck(list(self.backbone(data["search"]).values()))
        features = xcorr_depthwise(xf[0], zf[0])
        for i in range(len(xf) - 1):
            features = torch.cat([features, xcorr_depthwise(xf[i + 1], zf[i + 1])], 1)
        features = self.down(features)
        cls, loc, cen = self.car_head(features)
        cls = F.log_softmax(cls, dim=1)
        cls_loss = F.nll_loss(cls, data["label_cls"])
        loc_loss = F.l1_loss(loc, data["bbox"])
        cen_loss = F.binary_cross_entropy_with_logits(cen, data["label_cen"])
        return {"total_loss": cls_loss + 3.0 * loc_loss + cen_loss}


def build_opt_lr(model, current_epoch=0):
    if current_epoch >= TRAIN_EPOCH:
        for param in model.backbone.parameters():
            param.requires_grad = True
    else:
        for param in model.backbone.parameters():
            param.requires_grad = False
        for m in model.backbone.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()

    trainable_params = []
    trainable_params += [{'params': filter(lambda x: x.requires_grad, model.backbone.parameters()),
                          'lr': LAYERS_LR * BASE_LR}]
    trainable_params += [{'params': model.neck.parameters(), 'lr': BASE_LR}]
    trainable_params += [{'params': model.car_head.parameters(), 'lr': BASE_LR}]
    trainable_params += [{'params': model.down.parameters(), 'lr': BASE_LR}]
    optimizer = torch.optim.SGD(trainable_params, momentum=0.9, weight_decay=1e-4)
    return optimizer


model = ModelBuilder().train()
optimizer = build_opt_lr(model, current_epoch=0)
down_before = model.down.weight.detach().clone()
for idx in range(3):
    data = {"template": torch.randn(1, 3, 48, 48), "search": torch.randn(1, 3, 72, 72),
            "label_cls": torch.randint(0, 2, (1, 6, 6)), "bbox": torch.rand(1, 4, 6, 6) * 4,
            "label_cen": torch.rand(1, 1, 6, 6)}
    loss = model(data)["total_loss"].mean()
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    optimizer.step()
    print(f"iter {idx} loss {loss.item():.4f}")

print("down.weight grad norm:", round(model.down.weight.grad.norm().item(), 6))
print("down.weight changed:", not torch.equal(model.down.weight, down_before))
