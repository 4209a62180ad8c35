"""The fixed twin: the converter's parameters get their own group in the optimizer
(Syencil/mobile-yolov5-pruning-distillation#75)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
student = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU(), nn.Conv2d(8, 8, 3, padding=1), nn.SiLU())
head = nn.Conv2d(8, 3 * 7, 1)
teacher = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.SiLU(), nn.Conv2d(16, 16, 3, padding=1)).eval()
teacher.requires_grad_(False)
S_Converter = nn.Sequential(nn.Conv2d(8, 16, 1), nn.ReLU())
T_Converter = nn.ReLU()

pg0, pg1 = [], []
for name, p in list(student.named_parameters()) + list(head.named_parameters()):
    (pg1 if name.endswith(".weight") or name == "weight" else pg0).append(p)
optimizer = torch.optim.SGD([{"params": pg0}, {"params": pg1, "weight_decay": 5e-4},
                             {"params": S_Converter.parameters()}], lr=0.01, momentum=0.937)

imgs, targets = torch.randn(4, 3, 32, 32), torch.randn(4, 21, 16, 16)
w0 = S_Converter[0].weight.detach().clone()
for step in range(3):
    feat = student(imgs)
    loss_det = F.mse_loss(head(feat), targets)
    with torch.no_grad():
        t_feat = teacher(imgs)
    loss_feat = F.mse_loss(S_Converter(feat), T_Converter(t_feat))
    loss = loss_det + 0.5 * loss_feat
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"S_Converter grad set: {S_Converter[0].weight.grad is not None}; "
      f"changed: {not torch.equal(S_Converter[0].weight, w0)}")
