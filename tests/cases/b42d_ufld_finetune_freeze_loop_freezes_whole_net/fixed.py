# Ultra-Fast-Lane-Detection train.py, finetune branch with the asker's freeze loop added
# (cfzd/Ultra-Fast-Lane-Detection issue #282).
import torch
import torchvision

torch.manual_seed(0)


class resnet(torch.nn.Module):  # model/backbone.py
    def __init__(self):
        super().__init__()
        model = torchvision.models.resnet18(weights=None)
        self.conv1, self.bn1, self.relu, self.maxpool = model.conv1, model.bn1, model.relu, model.maxpool
        self.layer1, self.layer2, self.layer3, self.layer4 = model.layer1, model.layer2, model.layer3, model.layer4

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x2 = self.layer2(x)
        x3 = self.layer3(x2)
        x4 = self.layer4(x3)
        return x2, x3, x4


class parsingNet(torch.nn.Module):  # model/model.py (use_aux=False)
    def __init__(self, cls_dim=(11, 4, 4)):
        super().__init__()
        self.cls_dim = cls_dim
        self.total_dim = cls_dim[0] * cls_dim[1] * cls_dim[2]
        self.model = resnet()
        self.cls = torch.nn.Sequential(
            torch.nn.Linear(80, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, self.total_dim),
        )
        self.pool = torch.nn.Conv2d(512, 8, 1)

    def forward(self, x):
        x2, x3, fea = self.model(x)
        fea = self.pool(fea).view(-1, 80)
        return self.cls(fea).view(-1, *self.cls_dim)


net = parsingNet()
training_params = filter(lambda p: p.requires_grad, net.parameters())  # get_optimizer
optimizer = torch.optim.SGD(training_params, lr=0.1, momentum=0.9, weight_decay=1e-4)

# cfg.finetune: only use backbone parameters of a previously trained model
state_all = parsingNet().state_dict()
state_clip = {k: v for k, v in state_all.items() if 'model' in k}
net.load_state_dict(state_clip, strict=False)
for param in net.model.parameters():
    param.requires_grad = False

criterion = torch.nn.CrossEntropyLoss()
cls_before = net.cls[2].weight.detach().clone()
net.train()
for b_idx in range(2):
    img = torch.randn(2, 3, 64, 160)
    cls_label = torch.randint(0, 11, (2, 4, 4))
    cls_out = net(img)
    loss = criterion(cls_out, cls_label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("cls head changed:", not torch.equal(cls_before, net.cls[2].weight))
print("backbone conv1 grad:", net.model.conv1.weight.grad)
