"""Learning-Texture-Invariant-Representation (MyeongJin-Kim/Learning-Texture-Invariant-Representation#10,
https://github.com/MyeongJin-Kim/Learning-Texture-Invariant-Representation/issues/10): in train_gta2cityscapes.py
(stage 1, output-level adversarial adaptation GTA5 -> Cityscapes) the adversarial loss loss_adv does not change the
segmentation network at all: training gives the same model whatever lambda_adv is.
Why: optimizer.step() for the segmentation model runs right after loss_seg_source.backward(), before
loss_adv.backward(); the gradient loss_adv leaves in the model is erased by optimizer.zero_grad() at the start of
the next iteration without any step having used it.
Fix (the reporter): call optimizer.step() after loss_adv.backward().
Stand-ins: DeeplabVGG and FCDiscriminator are two small conv nets, the data loaders random images and labels."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable

STAGE = 1
NUM_CLASSES = 4


class DeeplabVGG(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, num_classes, 1))

    def forward(self, x):
        return self.features(F.avg_pool2d(x, 2))


class FCDiscriminator(nn.Module):
    def __init__(self, num_classes, ndf=8):
        super().__init__()
        self.conv1 = nn.Conv2d(num_classes, ndf, kernel_size=4, stride=2, padding=1)
        self.classifier = nn.Conv2d(ndf, 1, kernel_size=4, stride=2, padding=1)
        self.leaky_relu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        return self.classifier(self.leaky_relu(self.conv1(x)))


def loss_calc(pred, label):
    label = Variable(label.long())
    return nn.CrossEntropyLoss(ignore_index=255)(pred, label)


def main(lambda_adv):
    torch.manual_seed(0)
    model = DeeplabVGG(num_classes=NUM_CLASSES)
    optimizer = optim.SGD(model.parameters(), lr=2.5e-3, momentum=0.9, weight_decay=5e-4)
    model_D = FCDiscriminator(num_classes=NUM_CLASSES)
    optimizer_D = optim.Adam(model_D.parameters(), lr=1e-4, betas=(0.9, 0.99))
    bce_loss = torch.nn.BCEWithLogitsLoss()
    source_adv_label = 0
    target_adv_label = 1
    interp = nn.Upsample(size=(16, 16), mode='bilinear', align_corners=True)
    interp_target = nn.Upsample(size=(16, 16), mode='bilinear', align_corners=True)
    trainloader = [(torch.randn(2, 3, 16, 16), torch.randint(0, NUM_CLASSES, (2, 16, 16))) for _ in range(4)]
    targetloader = [(torch.randn(2, 3, 16, 16), torch.randint(0, NUM_CLASSES, (2, 16, 16))) for _ in range(4)]

    for i_iter in range(4):
        optimizer.zero_grad()
        optimizer_D.zero_grad()

        # don't accumulate grads in D
        for param in model_D.parameters():
            param.requires_grad = False

        # train with source
        image_source, label = trainloader[i_iter]
        pred_source = model(Variable(image_source))
        pred_source = interp(pred_source)
        loss_seg_source = loss_calc(pred_source, label)
        loss_seg_source.backward()


        if STAGE == 1:
            # train with target
            image_target, target_label = targetloader[i_iter]
            pred_target = model(Variable(image_target))
            pred_target = interp_target(pred_target)

            # output-level adversarial training
            D_output_target = model_D(F.softmax(pred_target, dim=1))
            loss_adv = bce_loss(D_output_target, Variable(torch.FloatTensor(D_output_target.data.size()).fill_(source_adv_label)))
            loss_adv = loss_adv * lambda_adv
            loss_adv.backward()

        # optimize
        optimizer.step()

        if STAGE == 1:

            # train discriminator
            for param in model_D.parameters():
                param.requires_grad = True
            pred_source = pred_source.detach()
            pred_target = pred_target.detach()
            D_output_source = model_D(F.softmax(pred_source, dim=1))
            D_output_target = model_D(F.softmax(pred_target, dim=1))
            loss_D_source = bce_loss(D_output_source, Variable(torch.FloatTensor(D_output_source.data.size()).fill_(source_adv_label)))
            loss_D_target = bce_loss(D_output_target, Variable(torch.FloatTensor(D_output_target.data.size()).fill_(target_adv_label)))
            loss_D_source = loss_D_source / 2
            loss_D_target = loss_D_target / 2
            loss_D_source.backward()
            loss_D_target.backward()
            optimizer_D.step()

        print('iter = {0:8d}, loss_seg_source = {1:.5f}, loss_adv = {2:.5f}'.format(i_iter, loss_seg_source.item(), loss_adv.item()))
    return model


model_adv = main(lambda_adv=0.5)
model_no_adv = main(lambda_adv=0.0)
print("loss_adv changed the segmentation model:",
      not torch.equal(model_adv.features[0].weight, model_no_adv.features[0].weight))
