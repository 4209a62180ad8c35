"""WMD-group/SMACT (ROOST band-gap trainer), https://github.com/WMD-group/SMACT/pull/601
Seen (review of smact/property_prediction/roost/train.py): the "best" model restored at the end of training is
just the last epoch's weights. Why: best_state_dict = model.state_dict().copy() is a shallow dict copy whose
tensors share storage with the live parameters, so every later optimizer step rewrites the snapshot too, and
load_state_dict(best_state_dict) restores nothing.
Fix: best_state_dict = copy.deepcopy(model.state_dict())  (or {k: v.detach().clone() ...}).
"""
import copy
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=5e-2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=2)
x_tr, y_tr = torch.randn(64, 6), torch.randn(64, 1)
x_val, y_val = torch.randn(32, 6), torch.randn(32, 1)

best_val_loss, best_state_dict, best_epoch = float("inf"), None, -1
for epoch in range(8):
    model.train()
    loss = nn.functional.mse_loss(model(x_tr), y_tr)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = nn.functional.mse_loss(model(x_val), y_val).item()
    scheduler.step(val_loss)
    if val_loss < best_val_loss:
        best_val_loss, best_epoch = val_loss, epoch
        best_state_dict = copy.deepcopy(model.state_dict())
        epochs_without_improvement = 0

model.load_state_dict(best_state_dict)
with torch.no_grad():
    restored = nn.functional.mse_loss(model(x_val), y_val).item()
print(f"best epoch {best_epoch} val {best_val_loss:.4f}; restored model val {restored:.4f}")
