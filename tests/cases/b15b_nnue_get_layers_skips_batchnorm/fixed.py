"""Stockfish NNUE trainer (official-stockfish/nnue-pytorch PR #91, "Fixes the bug where BatchNorm is not being
trained", https://github.com/official-stockfish/nnue-pytorch/pull/91): configure_optimizers collects the
parameter groups with NNUE.get_layers, which only yields parameters of children that are `nn.Linear`. The
BatchNorm1d layers (bn_input, bn_l1, bn_l2) take part in every forward and get gradients, but their weight and
bias are in no optimizer group, so they stay at their initial 1/0. The PR removes the redundant module check.
(Lightning's training loop and the Ranger optimizer are replaced by a plain loop and Adam.)"""
import torch
from torch import nn
import torch.nn.functional as F

L1, L2, L3 = 32, 8, 8
NUM_FEATURES = 64


class NNUE(nn.Module):
    def __init__(self, lambda_=1.0):
        super(NNUE, self).__init__()
        self.input = nn.Linear(NUM_FEATURES, L1)
        self.bn_input = nn.BatchNorm1d(num_features=L1)
        self.l1 = nn.Linear(2 * L1, L2)
        self.bn_l1 = nn.BatchNorm1d(num_features=L2)
        self.l2 = nn.Linear(L2, L3)
        self.bn_l2 = nn.BatchNorm1d(num_features=L3)
        self.output = nn.Linear(L3, 1)
        self.lambda_ = lambda_

    def forward(self, us, them, w_in, b_in):
        w = self.bn_input(self.input(w_in))
        b = self.bn_input(self.input(b_in))
        l0_ = (us * torch.cat([w, b], dim=1)) + (them * torch.cat([b, w], dim=1))
        l0_ = torch.clamp(l0_, 0.0, 1.0)
        l1_ = torch.clamp(self.bn_l1(self.l1(l0_)), 0.0, 1.0)
        l2_ = torch.clamp(self.bn_l2(self.l2(l1_)), 0.0, 1.0)
        return self.output(l2_)

    def step_(self, batch, batch_idx, loss_type):
        us, them, white, black, outcome, score = batch
        q = self(us, them, white, black)
        t = outcome
        p = (score / 361).sigmoid()
        teacher_loss = -(p * F.logsigmoid(q) + (1.0 - p) * F.logsigmoid(-q))
        outcome_loss = -(t * F.logsigmoid(q) + (1.0 - t) * F.logsigmoid(-q))
        result = self.lambda_ * teacher_loss + (1.0 - self.lambda_) * outcome_loss
        return result.mean()

    def training_step(self, batch, batch_idx):
        return self.step_(batch, batch_idx, 'train_loss')

    def configure_optimizers(self):
        # Train with a lower LR on the output layer
        LR = 1e-2
        train_params = [
            {'params': self.get_layers(lambda x: self.output != x), 'lr': LR},
            {'params': self.get_layers(lambda x: self.output == x), 'lr': LR / 10},
        ]
        optimizer = torch.optim.Adam(train_params, betas=(.9, 0.999), eps=1.0e-7)
        return optimizer

    def get_layers(self, filt):
        """
        Returns a list of layers.
        filt: Return true to include the given layer.
        """
        for i in self.children():
            if filt(i):
                for p in i.parameters():
                    yield p


def make_batch(n=32):
    us = torch.randint(0, 2, (n, 1)).float()
    them = 1.0 - us
    white = (torch.rand(n, NUM_FEATURES) < 0.1).float()
    black = (torch.rand(n, NUM_FEATURES) < 0.1).float()
    outcome = torch.randint(0, 3, (n, 1)).float() / 2
    score = torch.randn(n, 1) * 300
    return us, them, white, black, outcome, score


torch.manual_seed(0)
nnue = NNUE()
optimizer = nnue.configure_optimizers()
nnue.train()
for batch_idx in range(10):
    batch = make_batch()
    optimizer.zero_grad()
    loss = nnue.training_step(batch, batch_idx)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
print(f"bn_l1.weight grad set: {nnue.bn_l1.weight.grad is not None}; "
      f"still all ones: {bool(torch.all(nnue.bn_l1.weight == 1))}")
