# Semi-supervised 3D segmentation (MASSL, BraTS18): one shared encoder, a segmentation
# decoder trained on labeled volumes and a reconstruction decoder trained on unlabeled
# volumes, two Adam optimizers, phases run one after the other in each iteration.
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class DiceCoefficientLF(nn.Module):
    def forward(self, y_pred, y_true):
        smooth = 1e-5
        inter = torch.sum(y_pred * y_true)
        return 1.0 - (2.0 * inter + smooth) / (torch.sum(y_pred) + torch.sum(y_true) + smooth)


class MASSL_norm(nn.Module):
    def __init__(self, in_ch=1, n_classes=1, base=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv3d(in_ch, base, 3, padding=1), nn.LeakyReLU())
        self.decoder_seg = nn.Sequential(nn.Conv3d(base, base, 3, padding=1), nn.LeakyReLU())
        self.conv3d_l4 = nn.Conv3d(base, n_classes, 1)
        self.decoder_rec = nn.Sequential(nn.Conv3d(base, base, 3, padding=1), nn.LeakyReLU())
        self.conv3d_l4_ssl = nn.Conv3d(base, 2, 1)

    def forward(self, x, phase, network_switch):
        key = 'trainL_' if phase == 'trainLabeled' else 'trainU_'
        for p in self.encoder.parameters():
            p.requires_grad = network_switch[key + 'encoder']
        for p in self.decoder_seg.parameters():
            p.requires_grad = network_switch[key + 'decoder_seg']
        for p in self.decoder_rec.parameters():
            p.requires_grad = network_switch[key + 'decoder_rec']
        f = self.encoder(x)
        outputsL = torch.sigmoid(self.conv3d_l4(self.decoder_seg(f)))
        outputsU = self.conv3d_l4_ssl(self.decoder_rec(f))
        return outputsL, outputsU


switch = {'trainL_encoder': True, 'trainL_decoder_seg': True, 'trainL_decoder_rec': False,
          'trainU_encoder': True, 'trainU_decoder_seg': False, 'trainU_decoder_rec': True}
model = MASSL_norm(1, 1, 4)
criterion = (DiceCoefficientLF(), nn.MSELoss())
optimizer = (optim.Adam(model.parameters(), lr=1e-2), optim.Adam(model.parameters(), lr=1e-3))

sample1 = {'image': torch.randn(2, 4, 8, 8, 8), 'mask': (torch.rand(2, 1, 8, 8, 8) > 0.7).float()}
sample2 = {'image': torch.randn(2, 4, 8, 8, 8), 'mask': torch.zeros(2, 1, 8, 8, 8)}
for phase in ['trainLabeled', 'trainUnlabeled']:
    model.train()
    enc_before = model.encoder[0].weight.detach().clone()
    if phase == 'trainLabeled':
        inputs = sample1['image'][:, 2:3].float()
        labels = sample1['mask'].float()
        image = sample1['image'][:, 2:3].float()
    else:
        inputs = sample2['image'][:, 2:3].float()
        image = sample2['image'][:, 2:3].float()
    optimizer[0].zero_grad()
    optimizer[1].zero_grad()
    with torch.set_grad_enabled(True):
        if phase == 'trainLabeled':
            outputsL, outputsU = model(inputs, phase=phase, network_switch=switch)
            outputsU_back = outputsU[:, 0]
            outputsU_fore = outputsU[:, 1]
            labels_back = (1.0 - outputsL) * image
            labels_fore = outputsL * image
            w1, w2, w3 = 1.0, 0.0, 0.0
            loss = w1 * criterion[0](outputsL, labels) + \
                w2 * criterion[1](outputsU_back, labels_back[:, 0]) + \
                w3 * criterion[1](outputsU_fore, labels_fore[:, 0])
        else:
            outputsL, outputsU = model(inputs, phase=phase, network_switch=switch)
            labels_back = (1.0 - outputsL) * image
            labels_fore = outputsL * image
            w2 = torch.sum(1.0 - outputsL)
            w3 = torch.sum(outputsL)
            total = w2 + w3
            w2, w3 = w2 / total, w3 / total
            loss = w2 * criterion[1](outputsU_back.float(), labels_back[:, 0].float()) + w3 * criterion[1](outputsU_fore.float(), labels_fore[:, 0].float())  # <- inplace_saved

        if phase == 'trainLabeled':
            loss.backward(retain_graph=True)
            optimizer[0].step()
        else:
            loss.backward()
            optimizer[1].step()
    print(phase, 'loss', round(loss.item(), 4),
          'encoder changed:', not torch.equal(enc_before, model.encoder[0].weight))
