"""Mean teacher / BYOL-style EMA: the teacher is a copy.deepcopy of the student with requires_grad
off, updated in place as an exponential moving average; a consistency loss on the teacher's output."""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 16))
        self.projector = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        return self.projector(self.backbone(x))


@torch.no_grad()
def update_ema(teacher, student, momentum):
    for t, s in zip(teacher.parameters(), student.parameters()):
        t.mul_(momentum).add_(s.detach(), alpha=1 - momentum)
    for tb, sb in zip(teacher.buffers(), student.buffers()):
        tb.copy_(sb)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    student = Encoder()
    predictor = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(list(student.parameters()) + list(predictor.parameters()), lr=0.05, momentum=0.9)
    for step in range(5):
        x = torch.randn(16, 8)
        view1 = x + 0.1 * torch.randn_like(x)
        view2 = x + 0.1 * torch.randn_like(x)
        online = predictor(student(view1))
        with torch.no_grad():
            target = teacher(view2)
        loss = 2 - 2 * F.cosine_similarity(online, target.detach(), dim=-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        update_ema(teacher, student, 0.99)
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"student": student.state_dict(), "teacher": teacher.state_dict(),
                    "predictor": predictor.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
