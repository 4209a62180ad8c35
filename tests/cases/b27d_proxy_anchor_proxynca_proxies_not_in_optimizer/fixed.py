"""Proxy-Anchor-CVPR2020 issue #25 "[bug] proxyNCA loss also has parameters that needs to optimized",
https://github.com/sung-yeon-kim/Proxy-Anchor-CVPR2020/issues/25: code/train.py builds the optimizer's
param_groups from the backbone and the embedding layer, and appends the loss's proxies only
`if args.loss == 'Proxy_Anchor':`. With --loss Proxy_NCA (the baseline the paper compares against, a wrapper of
pytorch-metric-learning's ProxyNCALoss, whose docs say "This loss requires an optimizer ... pass this loss's
parameters to that optimizer"), the proxies get gradients at every backward but sit in no optimizer, so they
stay at their random init. The author confirmed it ("I accidentally omitted the part of optimizing parameters
(i.e., proxy) of proxy-NCA ... I will correct that code soon"). Fix: append the criterion's parameters for
Proxy_NCA too. The backbone is a small MLP standing in for BN-Inception; data are random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
nb_classes, sz_embedding, lr = 5, 16, 1e-3
loss_name = 'Proxy_NCA'


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Module()
        self.model.features = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.model.embedding = nn.Linear(64, sz_embedding)

    def forward(self, x):
        return self.model.embedding(self.model.features(x))


class Proxy_NCA(nn.Module):  # stands in for losses.Proxy_NCA -> pml.losses.ProxyNCALoss
    def __init__(self, nb_classes, sz_embed, scale=32):
        super().__init__()
        self.proxies = nn.Parameter(torch.randn(nb_classes, sz_embed))
        self.scale = scale

    def forward(self, X, T):
        P = F.normalize(self.proxies, dim=1)
        X = F.normalize(X, dim=1)
        D = torch.cdist(X, P) ** 2
        return F.cross_entropy(-self.scale * D, T)


model = Backbone()
criterion = Proxy_NCA(nb_classes=nb_classes, sz_embed=sz_embedding)

# Train Parameters
param_groups = [
    {'params': list(set(model.parameters()).difference(set(model.model.embedding.parameters())))},
    {'params': model.model.embedding.parameters(), 'lr': float(lr) * 1},
]
if loss_name in ('Proxy_Anchor', 'Proxy_NCA'):
    param_groups.append({'params': criterion.parameters(), 'lr': float(lr) * 100})

opt = torch.optim.AdamW(param_groups, lr=float(lr), weight_decay=1e-4)

proxies_before = criterion.proxies.detach().clone()
for batch_idx in range(5):
    x = torch.randn(20, 32)
    y = torch.randint(0, nb_classes, (20,))
    m = model(x)
    loss = criterion(m, y)

    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 10)
    opt.step()

print("proxies.grad is None:", criterion.proxies.grad is None)
print("proxies changed after training:", not torch.equal(proxies_before, criterion.proxies.detach()))
