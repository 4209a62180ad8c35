"""The fixed twin: the hypernetwork's parameters are kept in a list, so every rebuilt Adam gets them again
(SSL92/hyperIQA#32)."""
import torch
import torch.nn.functional as F
from torch import nn


class HyperNet(nn.Module):
    def __init__(self, feat=16, target_in=8):
        super().__init__()
        self.res = nn.Sequential(nn.Conv2d(3, feat, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten())
        self.fc1w = nn.Linear(feat, target_in * feat)  # generates the target network's weights
        self.fc1b = nn.Linear(feat, target_in)
        self.fc2w = nn.Linear(feat, target_in)
        self.feat, self.target_in = feat, target_in

    def forward(self, img):
        f = self.res(img)
        w1 = self.fc1w(f).view(-1, self.target_in, self.feat)
        h = torch.sigmoid(torch.bmm(w1, f.unsqueeze(2)).squeeze(2) + self.fc1b(f))
        return (h * self.fc2w(f)).sum(1)


class HyperIQASolver:
    def __init__(self, lr=2e-4, lrratio=10):
        self.model_hyper = HyperNet()
        backbone_params = list(map(id, self.model_hyper.res.parameters()))
        self.hypernet_params = list(filter(lambda p: id(p) not in backbone_params, self.model_hyper.parameters()))
        self.lr, self.lrratio = lr, lrratio
        paras = [{'params': self.hypernet_params, 'lr': self.lr * self.lrratio},
                 {'params': self.model_hyper.res.parameters(), 'lr': self.lr}]
        self.solver = torch.optim.Adam(paras, weight_decay=5e-4)

    def train(self, data, epochs=3):
        for t in range(epochs):
            before = self.model_hyper.fc1w.weight.detach().clone()
            for img, label in data:
                self.solver.zero_grad()
                loss = F.l1_loss(self.model_hyper(img), label)
                loss.backward()
                self.solver.step()
            changed = not torch.equal(self.model_hyper.fc1w.weight, before)
            grad_set = self.model_hyper.fc1w.weight.grad is not None
            print(f"epoch {t}: hypernet fc1w grad set: {grad_set}, changed: {changed}")
            lr = self.lr / pow(10, (t // 6))
            self.paras = [{'params': self.hypernet_params, 'lr': lr * self.lrratio},
                          {'params': self.model_hyper.res.parameters(), 'lr': self.lr}]
            self.solver = torch.optim.Adam(self.paras, weight_decay=5e-4)


torch.manual_seed(0)
data = [(torch.rand(4, 3, 16, 16), torch.rand(4) * 100) for _ in range(2)]
HyperIQASolver().train(data)
