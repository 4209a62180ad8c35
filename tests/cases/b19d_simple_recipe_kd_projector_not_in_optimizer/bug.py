"""Simple-Recipe-Distillation (roymiles/Simple-Recipe-Distillation#1,
https://github.com/roymiles/Simple-Recipe-Distillation/issues/1): in the ImageNet ResNet34 -> ResNet18 code,
`self.embed` in OurDistillationLoss (imagenet/torchdistill/losses/single.py) "looks like a random projector ...
and seems not updated as it's not included in optimizer". The author: "yes that must have been an oversight".
Symptom: the projector gets a gradient from the representation loss at every step, but its weights never change.
Why: torchdistill's DistillationBox.setup builds the optimizer from trainable_module_list = [student_model]
(+ teacher if updatable); the criterion's projector is a module of the loss, not of the student.
Fix (the repo's later distillation.py): add the projector to the trainable modules,
trainable_module_list.append(self.criterion.term_dict['it_loss'][0].embed), before get_optimizer."""
import torch
import torch.nn.functional as F
from torch import nn


class OurDistillationLoss(nn.Module):
    def __init__(self, mode='mse', **kwargs):
        super().__init__()
        self.mode = mode
        # r34
        t_dim = 8
        s_dim = 8
        # projector
        self.embed = nn.Linear(s_dim, t_dim)
        self.bn_s = torch.nn.BatchNorm1d(t_dim, eps=0.0001, affine=False)
        self.bn_t = torch.nn.BatchNorm1d(t_dim, eps=0.0001, affine=False)

    def forward_loss(self, z_s, z_t):
        f_t = z_t
        f_s = self.embed(z_s)
        n, d = f_s.shape
        f_s_norm = self.bn_s(f_s)
        f_t_norm = self.bn_t(f_t)
        c_diff = f_s_norm - f_t_norm
        c_diff = torch.abs(c_diff)
        c_diff = c_diff.pow(4.0)
        loss = torch.log(c_diff.sum())
        return loss

    def forward(self, student_io_dict, teacher_io_dict, *args, **kwargs):
        z_s = student_io_dict['layer4']['output'].mean(-1).mean(-1)  # Bx512
        z_t = teacher_io_dict['layer4']['output'].mean(-1).mean(-1)  # Bx512
        # Rep loss
        l_rep = 2.0 * self.forward_loss(z_s, z_t)
        # Logit loss
        y_s = student_io_dict['fc']['output']
        y_t = teacher_io_dict['fc']['output']
        T = 1.0
        p_s = F.log_softmax(y_s / T, dim=1)
        p_t = F.softmax(y_t / T, dim=1)
        l_logit = F.kl_div(p_s, p_t, reduction='sum') * (T ** 2) / y_s.shape[0]
        total_loss = l_rep + l_logit
        return total_loss


class TinyResNet(nn.Module):
    """Stand-in for torchvision's resnet18/resnet34: a conv 'layer4' and an 'fc' head (hooked by torchdistill)."""
    def __init__(self, width=8, num_classes=5):
        super().__init__()
        self.layer4 = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU())
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x, io_dict):
        feat = self.layer4(x)
        io_dict['layer4'] = {'output': feat}
        logits = self.fc(feat.mean(-1).mean(-1))
        io_dict['fc'] = {'output': logits}
        return logits


torch.manual_seed(0)
teacher_model, student_model = TinyResNet(), TinyResNet()
teacher_model.requires_grad_(False)  # teacher: requires_grad: False in the yaml config
criterion = OurDistillationLoss()
# DistillationBox.setup: teacher not updatable, so the trainable modules are the student only
trainable_module_list = nn.ModuleList([student_model])  # <- optimizer
optimizer = torch.optim.SGD(trainable_module_list.parameters(), lr=0.1, momentum=0.9, weight_decay=0.0001)
embed_before = criterion.embed.weight.detach().clone()
for step in range(4):
    sample_batch = torch.randn(6, 3, 8, 8)
    teacher_io_dict, student_io_dict = {}, {}
    with torch.no_grad():
        teacher_model(sample_batch, teacher_io_dict)
    student_model(sample_batch, student_io_dict)
    loss = criterion(student_io_dict, teacher_io_dict)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("projector has a grad:", criterion.embed.weight.grad is not None)
print("projector weights changed:", not torch.equal(embed_before, criterion.embed.weight))
