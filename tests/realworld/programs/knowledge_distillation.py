"""Knowledge distillation: a teacher trained first, then put in eval mode and queried under
torch.no_grad; the student learns from temperature-softened KL plus cross-entropy; gradient
accumulation over two micro-batches."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(width):
    return nn.Sequential(nn.Linear(10, width), nn.ReLU(), nn.Linear(width, 4))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = torch.randn(64, 10), torch.randint(0, 4, (64,))
    teacher, student = mlp(32), mlp(8)
    t_opt = torch.optim.Adam(teacher.parameters(), lr=1e-2)
    for step in range(3):
        t_opt.zero_grad()
        loss = F.cross_entropy(teacher(x), y)
        loss.backward()
        t_opt.step()
        print(f"teacher {step} loss {loss.item():.6f}")
    teacher.eval()
    s_opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    T, accum = 4.0, 2
    for step in range(3):
        s_opt.zero_grad()
        for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
            with torch.no_grad():
                soft_targets = F.softmax(teacher(xb) / T, dim=-1)
            logits = student(xb)
            kd = F.kl_div(F.log_softmax(logits / T, dim=-1), soft_targets, reduction="batchmean") * T * T
            loss = (0.7 * kd + 0.3 * F.cross_entropy(logits, yb)) / accum
            loss.backward()
        s_opt.step()
        print(f"student {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"teacher": teacher.state_dict(), "student": student.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
