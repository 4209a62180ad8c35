# Report: kekmodel/MPL-pytorch issue #2 "Teacher Gradients"
#   https://github.com/kekmodel/MPL-pytorch/issues/2
# Meta Pseudo Labels: the teacher's MPL term (student feedback `dot_product` times the
# teacher's cross-entropy on its own hard pseudo labels) was computed from
# `t_logits_us.detach()`, so `t_loss_mpl` is a constant: it adds nothing to the teacher's
# gradient and "the MPL loss on the teacher does nothing essentially". The reporter: "we
# should not be detaching t_logits_us here"; the maintainer agreed and the repository now
# reads `F.cross_entropy(t_logits_us, hard_pseudo_label)`.
# Structure of main.py train_loop() (commit 0255c62); tiny MLPs in place of WideResNets,
# random tensors in place of CIFAR, amp/GradScaler/schedulers left out.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)


class Args:
    temperature = 1.0
    threshold = 0.6
    lambda_u = 1.0
    uda_steps = 5
    total_steps = 3
    lr = 0.05


def build_model():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))


args = Args()
teacher_model = build_model()
student_model = build_model()
criterion = nn.CrossEntropyLoss()
t_optimizer = optim.SGD(teacher_model.parameters(), lr=args.lr, momentum=0.9)
s_optimizer = optim.SGD(student_model.parameters(), lr=args.lr, momentum=0.9)

moving_dot_product = torch.empty(1)
limit = 3.0**(0.5)  # 3 = 6 / (f_in + f_out)
nn.init.uniform_(moving_dot_product, -limit, limit)

for step in range(args.total_steps):
    images_l, targets = torch.randn(8, 12), torch.randint(0, 5, (8,))
    images_uw = torch.randn(16, 12)
    images_us = images_uw + 0.3 * torch.randn(16, 12)

    batch_size = images_l.shape[0]
    t_images = torch.cat((images_l, images_uw, images_us))
    t_logits = teacher_model(t_images)
    t_logits_l = t_logits[:batch_size]
    t_logits_uw, t_logits_us = t_logits[batch_size:].chunk(2)
    del t_logits

    t_loss_l = criterion(t_logits_l, targets)

    soft_pseudo_label = torch.softmax(t_logits_uw.detach()/args.temperature, dim=-1)
    max_probs, hard_pseudo_label = torch.max(soft_pseudo_label, dim=-1)
    mask = max_probs.ge(args.threshold).float()
    t_loss_u = torch.mean(
        -(soft_pseudo_label * torch.log_softmax(t_logits_us, dim=-1)).sum(dim=-1) * mask
    )
    weight_u = args.lambda_u * min(1., (step+1) / args.uda_steps)
    t_loss_uda = t_loss_l + weight_u * t_loss_u

    s_images = torch.cat((images_l, images_us))
    s_logits = student_model(s_images)
    s_logits_l = s_logits[:batch_size]
    s_logits_us = s_logits[batch_size:]
    del s_logits

    s_loss_l_old = F.cross_entropy(s_logits_l.detach(), targets)
    s_loss = criterion(s_logits_us, hard_pseudo_label)

    s_loss.backward()
    s_optimizer.step()

    with torch.no_grad():
        s_logits_l = student_model(images_l)
    s_loss_l_new = F.cross_entropy(s_logits_l.detach(), targets)
    dot_product = s_loss_l_new - s_loss_l_old
    moving_dot_product = moving_dot_product * 0.99 + dot_product * 0.01
    dot_product = dot_product - moving_dot_product
    _, hard_pseudo_label = torch.max(t_logits_us.detach(), dim=-1)
    t_loss_mpl = dot_product * F.cross_entropy(t_logits_us, hard_pseudo_label)
    t_loss = t_loss_uda + t_loss_mpl

    t_loss.backward()
    t_optimizer.step()

    teacher_model.zero_grad()
    student_model.zero_grad()

    print(f"step {step}: s_loss {s_loss.item():.4f} t_loss {t_loss.item():.4f} "
          f"t_loss_mpl {t_loss_mpl.item():.4f}")

# The teacher's MPL term never reaches the teacher: no graph behind it.
print("t_loss_mpl.requires_grad:", t_loss_mpl.requires_grad, "grad_fn:", t_loss_mpl.grad_fn)
