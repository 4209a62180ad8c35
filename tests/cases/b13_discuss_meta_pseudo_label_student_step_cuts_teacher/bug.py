"""discuss.pytorch.org "Call backward() for two loss meta pseudo label" (t/157824): a Meta Pseudo Labels notebook
("exact, no approximation") trains the student on the teacher's soft pseudo-labels with s_u_loss.backward() and
s_optimizer.step(), then adds the stepped student's labelled loss to the teacher's loss, (t_l_loss +
t_mpl_loss).backward(). The optimizer step writes the student's new weights in place, outside the graph, so t_mpl_loss
carries no gradient to the teacher, and the teacher never learns from the student's feedback. The exact version takes
the student step differentiably (autograd.grad with create_graph) and evaluates the student at those weights."""
import torch
import torch.nn.functional as F
from torch import nn


def Net():
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))


torch.manual_seed(0)
l_x = torch.randn(16, 2)
l_y = (l_x[:, :1] * l_x[:, 1:] > 0).float()
x_unlabel = torch.randn(64, 2)
teacher, student = Net(), Net()
t_optimizer = torch.optim.SGD(teacher.parameters(), lr=0.1, momentum=0.9)
s_optimizer = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
for iteration in range(3):
    t_optimizer.zero_grad()
    s_optimizer.zero_grad()
    u_x = x_unlabel[torch.randint(0, 64, (16,))]
    t_u_logit = teacher(u_x)
    pseudo_y = torch.sigmoid(t_u_logit)
    s_u_logit = student(u_x)
    s_u_loss = F.binary_cross_entropy_with_logits(s_u_logit, pseudo_y)
    s_u_loss.backward()
    s_optimizer.step()  # <- cut_term
    s_l_logit_new = student(l_x)
    t_mpl_loss = F.binary_cross_entropy_with_logits(s_l_logit_new, l_y)
    t_l_logit = teacher(l_x)
    t_l_loss = F.binary_cross_entropy_with_logits(t_l_logit, l_y)
    mpl_grads = torch.autograd.grad(t_mpl_loss, list(teacher.parameters()), retain_graph=True, allow_unused=True)
    (t_l_loss + t_mpl_loss).backward()
    t_optimizer.step()
    print(f"iter {iteration}: t_l {t_l_loss.item():.4f} mpl {t_mpl_loss.item():.4f} "
          f"mpl reaches teacher: {any(g is not None for g in mpl_grads)}")
