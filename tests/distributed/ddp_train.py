"""A small DDP training job for the distributed tests: ``torchrun ... ddp_train.py MODE OUT``.

MODE: ``correct`` (every layer reaches the loss), ``broken`` (``aux`` is never called and ``mid``'s
output is cut by ``.detach()``), ``exit`` (as correct, but rank 1 leaves with status 3 after one step),
``kill`` (as correct, but rank 1 is killed by SIGKILL after one step) or ``find_unused`` (``aux`` never called, ``find_unused_parameters=True``). Each rank saves its final
state dict in the folder OUT. ``DDP_TEST_DEVICE=cuda`` runs on one GPU per rank with NCCL.
"""
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

MODE, OUT = sys.argv[1], sys.argv[2]
CUDA = os.environ.get("DDP_TEST_DEVICE") == "cuda"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.mid = nn.Linear(8, 8)  # <- mid
        self.head = nn.Linear(8, 1)
        self.aux = nn.Linear(8, 1)  # <- aux

    def forward(self, x):
        h = torch.relu(self.body(x))
        if MODE in ("correct", "exit", "kill"):
            return self.head(h + self.mid(h)) + self.aux(h)
        if MODE == "broken":
            m = self.mid(h).detach()  # <- cut
            return self.head(h + m)
        return self.head(h + self.mid(h))


def main():
    dist.init_process_group("nccl" if CUDA else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if CUDA else torch.device("cpu")
    torch.manual_seed(0)
    model = Net().to(device)
    ddp = DDP(model, device_ids=[device.index] if CUDA else None, find_unused_parameters=MODE == "find_unused")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    for step in range(3):
        x = torch.randn(16, 4, device=device)
        loss = ddp(x).pow(2).mean()  # <- loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if MODE == "exit" and rank == 1:
            sys.exit(3)
        if MODE == "kill" and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    torch.save(model.state_dict(), os.path.join(OUT, f"rank{rank}.pt"))
    dist.barrier()  # no rank closes its connections while the other still uses them
    dist.destroy_process_group()


main()
