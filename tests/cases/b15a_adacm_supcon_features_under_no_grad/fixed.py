"""Fixed twin of bug.py (hangyu94/Ada-CM#8): the unlabeled features are computed with gradients (no no_grad block),
so the supervised-contrastive term Ls trains the model."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SupConLoss(nn.Module):
    def __init__(self, temperature=0.07):
        super().__init__()
        self.temperature = temperature

    def forward(self, features):
        features = F.normalize(features, dim=2)
        n_views = features.shape[1]
        contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
        logits = contrast @ contrast.T / self.temperature
        logits = logits - torch.eye(len(contrast)) * 1e9
        targets = torch.arange(len(features)).repeat(n_views)
        positives = (targets[:, None] == targets[None, :]).float() - torch.eye(len(contrast))
        log_prob = F.log_softmax(logits, dim=1)
        return -(positives * log_prob).sum(1).div(positives.sum(1)).mean()


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.head = nn.Linear(32, 7)
        self.proj = nn.Linear(32, 16)

    def forward(self, x):
        h = self.body(x)
        return self.head(h), self.proj(h)


def mask_generate(max_probs, max_idx, batch, threshold):
    mask_ori = torch.zeros(batch)
    for i in range(7):
        idx = np.where(max_idx.cpu() == i)[0]
        m = max_probs[idx].ge(threshold[i]).float()
        for k in range(len(idx)):
            mask_ori[idx[k]] += m[k]
    return mask_ori


def train(model, optimizer, criterion_ce, criterion_simclr, threshold, batches):
    model.train()
    for batch_idx, (inputs_x, targets_x, inputs_u, inputs_u2, inputs_strong) in enumerate(batches):
        batch_size = inputs_x.size(0)
        outputs_u, feature_u = model(inputs_u)
        outputs_u2, feature_u2 = model(inputs_u2)
        p = (torch.softmax(outputs_u, dim=1) + torch.softmax(outputs_u2, dim=1)) / 2
        max_probs, max_idx = torch.max(p, dim=1)
        max_idx = max_idx.detach()
        output_x, _ = model(inputs_x)
        mask = mask_generate(max_probs, max_idx, batch_size, threshold)
        mask_idx = np.where(mask.cpu() == 0)[0]
        features_prob = torch.cat([feature_u[mask_idx, :].unsqueeze(1), feature_u2[mask_idx, :].unsqueeze(1)], dim=1)
        Lx = criterion_ce(output_x, targets_x).mean()
        Ls = criterion_simclr(features_prob)
        output_strong, _ = model(inputs_strong)
        Lu = (criterion_ce(output_strong, max_idx) * mask).mean()
        loss = Lx * 0.5 + Lu + Ls * 0.1
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"batch {batch_idx}: Lx {Lx.item():.4f} Lu {Lu.item():.4f} Ls {Ls.item():.4f} "
              f"(Ls requires grad: {Ls.requires_grad})")


torch.manual_seed(0)
model = Backbone()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion_ce = nn.CrossEntropyLoss(reduction='none')
threshold = [0.2] * 7
batches = [(torch.randn(8, 12), torch.randint(0, 7, (8,)), torch.randn(8, 12), torch.randn(8, 12),
            torch.randn(8, 12)) for _ in range(3)]
train(model, optimizer, criterion_ce, SupConLoss(), threshold, batches)
