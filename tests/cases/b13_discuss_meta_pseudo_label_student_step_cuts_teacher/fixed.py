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
    names, params = zip(*student.named_parameters())
    grads = torch.autograd.grad(s_u_loss, params, create_graph=True)
    fast = {n: p - 0.1 * g for n, p, g in zip(names, params, grads)}
    s_l_logit_new = torch.func.functional_call(student, fast, (l_x,))
    t_mpl_loss = F.binary_cross_entropy_with_logits(s_l_logit_new, l_y)
    t_l_logit = teacher(l_x)
    t_l_loss = F.binary_cross_entropy_with_logits(t_l_logit, l_y)
    mpl_grads = torch.autograd.grad(t_mpl_loss, list(teacher.parameters()), retain_graph=True, allow_unused=True)
    (t_l_loss + t_mpl_loss + s_u_loss).backward()
    t_optimizer.step()
    s_optimizer.step()
    print(f"iter {iteration}: t_l {t_l_loss.item():.4f} mpl {t_mpl_loss.item():.4f} "
          f"mpl reaches teacher: {any(g is not None for g in mpl_grads)}")
    assert all(g is not None and g.abs().sum() > 0 for g in mpl_grads)
before = [p.detach().clone() for net in (teacher, student) for p in net.parameters()]
t_optimizer.zero_grad()
s_optimizer.zero_grad()
pseudo_y = torch.sigmoid(teacher(x_unlabel[:16]))
s_u_loss = F.binary_cross_entropy_with_logits(student(x_unlabel[:16]), pseudo_y)
names, params = zip(*student.named_parameters())
fast = {n: p - 0.1 * g for n, p, g in zip(names, params, torch.autograd.grad(s_u_loss, params, create_graph=True))}
t_mpl_loss = F.binary_cross_entropy_with_logits(torch.func.functional_call(student, fast, (l_x,)), l_y)
(F.binary_cross_entropy_with_logits(teacher(l_x), l_y) + t_mpl_loss + s_u_loss).backward()
t_optimizer.step()
s_optimizer.step()
after = [p for net in (teacher, student) for p in net.parameters()]
assert all(p.grad is not None and not torch.equal(p, b) for p, b in zip(after, before))
print("the teacher learns from the student's feedback; every parameter got a gradient and changed")
