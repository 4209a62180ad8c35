# torchvision detection backbone_utils.resnet_fpn_backbone as of v0.8 (pytorch/vision issue #3394):
# trainable_layers=5 is meant to train the whole ResNet, but the stem BatchNorm "bn1" stays frozen.
import torch
from torchvision.models import resnet
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

torch.manual_seed(0)


def resnet_fpn_backbone(backbone_name, pretrained, norm_layer=None, trainable_layers=3,
                        returned_layers=None, extra_blocks=None):
    backbone = resnet.__dict__[backbone_name](weights=None, norm_layer=norm_layer)
    # select layers that wont be frozen
    assert 0 <= trainable_layers <= 5
    layers_to_train = ['layer4', 'layer3', 'layer2', 'layer1', 'conv1'][:trainable_layers]
    # freeze layers only if pretrained backbone is used
    for name, parameter in backbone.named_parameters():
        if all([not name.startswith(layer) for layer in layers_to_train]):
            parameter.requires_grad_(False)  # <- no_update
    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()
    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    return_layers = {f'layer{k}': str(v) for v, k in enumerate(returned_layers)}
    in_channels_stage2 = backbone.inplanes // 8
    in_channels_list = [in_channels_stage2 * 2 ** (i - 1) for i in returned_layers]
    out_channels = 32
    return BackboneWithFPN(backbone, return_layers, in_channels_list, out_channels, extra_blocks=extra_blocks)


# train from scratch: nothing should be frozen
model = resnet_fpn_backbone('resnet18', pretrained=False, norm_layer=None, trainable_layers=5)
params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)

bn1_before = model.body.bn1.weight.detach().clone()
model.train()
for step in range(2):
    images = torch.randn(2, 3, 64, 64)
    feats = model(images)
    loss = sum(f.pow(2).mean() for f in feats.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("conv1 grad is None:", model.body.conv1.weight.grad is None)
print("bn1 weight grad:", model.body.bn1.weight.grad)
print("bn1 weight changed:", not torch.equal(bn1_before, model.body.bn1.weight))
