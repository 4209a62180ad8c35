"""The fixed twin: the student's features are the ones cached by the gradient-enabled forward and only the
teacher runs under no_grad, so the hierarchical term trains the LoRA adapters."""
import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, cin, cout, r=2):
        super().__init__()
        self.base = nn.Linear(cin, cout)
        self.base.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, cin) * 0.1)
        self.lora_B = nn.Parameter(torch.randn(cout, r) * 0.1)

    def forward(self, x):
        return self.base(x) + x @ self.lora_A.t() @ self.lora_B.t()


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(LoRALinear(8, 16), nn.SiLU(), LoRALinear(16, 16), nn.SiLU())
        self.head = LoRALinear(16, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


def register_feature_hooks(model, cache):
    for i in (1, 3):
        model.backbone[i].register_forward_hook(lambda m, inp, out, i=i: cache.__setitem__(i, out))


def compute_hierarchical_distillation_loss(student, teacher, img, student_feats, teacher_feats):
    with torch.no_grad():
        teacher(img)
    return sum(F.mse_loss(student_feats[i], teacher_feats[i]) for i in student_feats)


torch.manual_seed(0)
teacher = Detector().requires_grad_(False)
img, target = torch.randn(16, 8), torch.randn(16, 4)
trained = {}
for hier_weight in (0.0, 1.0):
    torch.manual_seed(1)
    student = Detector()
    student_feats, teacher_feats = {}, {}
    register_feature_hooks(student, student_feats)
    register_feature_hooks(teacher, teacher_feats)
    optimizer = torch.optim.SGD([p for p in student.parameters() if p.requires_grad], lr=0.1)
    for step in range(3):
        student_feats.clear()
        teacher_feats.clear()
        det_loss = F.mse_loss(student(img), target)
        hier_loss = compute_hierarchical_distillation_loss(student, teacher, img, student_feats, teacher_feats)
        loss = det_loss + hier_weight * hier_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trained[hier_weight] = student.backbone[0].lora_B.detach().clone()
    print(f"hier_weight {hier_weight}: det {det_loss.item():.4f} hier {hier_loss.item():.4f}")
print("the hierarchical term changes the LoRA adapters:", not torch.equal(trained[0.0], trained[1.0]))
