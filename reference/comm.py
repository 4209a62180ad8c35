"""The processes of an L2C run and what travels between them: who holds which nodes, the Δθ exchange, gathers.

N nodes over P processes (started by torchrun) give process r the contiguous nodes [rN/P, (r+1)N/P).
Each round a process sends the change vectors Δθ_j of its nodes to every process holding a node i that
has j in its neighbourhood, with point-to-point sends (`torch.distributed.batch_isend_irecv`), and
receives the changes its own nodes need. A single process (P = 1) is the same code with no peers.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.distributed as dist

BACKENDS = ("auto", "gloo", "nccl")


class CommError(ValueError):
    """The process setup cannot run (unknown backend, NCCL without a GPU, ...); one-line message."""


@dataclass(frozen=True)
class Group:
    """This process's place in the run; the default is the single-process run."""

    rank: int = 0
    world: int = 1
    backend: str | None = None  # None: no process group (P = 1)
    device: torch.device = torch.device("cpu")  # where tensors must be for the backend's transfers

    def owned(self, n: int, rank: int | None = None) -> range:
        """The nodes held by ``rank`` (default: this process)."""
        r = self.rank if rank is None else rank
        return range(r * n // self.world, (r + 1) * n // self.world)

    def gather_rows(self, rows: torch.Tensor, n: int) -> torch.Tensor:
        """Every process's ``rows`` (one per owned node) stacked in node order, on every process."""
        if self.world == 1:
            return rows
        width = max(len(self.owned(n, r)) for r in range(self.world))
        padded = rows.new_zeros((width, *rows.shape[1:]), device=self.device)
        padded[: len(rows)] = rows.to(self.device)
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        dist.all_gather(parts, padded)
        return torch.cat([p[: len(self.owned(n, r))] for r, p in enumerate(parts)]).to(rows.device)


def resolve_backend(backend: str) -> str:
    """``auto`` is NCCL when CUDA and NCCL are available, else gloo."""
    if backend not in BACKENDS:
        raise CommError(f"unknown backend {backend!r}; valid names: {', '.join(BACKENDS)}")
    if backend == "auto":
        return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl" and not torch.cuda.is_available():
        raise CommError("--backend nccl needs a CUDA device; use --backend gloo on CPUs")
    return backend


def _group_of_default(backend: str) -> Group:
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return Group(dist.get_rank(), dist.get_world_size(), backend, device)


def current_group() -> Group:
    """The default process group when one is set up (by `process_group` or the caller), else a single process."""
    if dist.is_available() and dist.is_initialized():
        return _group_of_default(dist.get_backend())
    return Group()


@contextmanager
def process_group(backend: str = "auto", timeout_s: float = 300.0) -> Iterator[Group]:
    """Join the run torchrun started (``WORLD_SIZE`` and friends in the environment) for the duration.

    Without torchrun's environment this is the single process; a group set up by the caller is used as is
    and left open.
    """
    if (dist.is_available() and dist.is_initialized()) or "WORLD_SIZE" not in os.environ:
        yield current_group()
        return
    name = resolve_backend(backend)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if name == "nccl":
        torch.cuda.set_device(local)
    dist.init_process_group(name, timeout=datetime.timedelta(seconds=timeout_s))
    try:
        # a first collective with every rank: NCCL needs one before point-to-point calls some ranks sit out
        dist.barrier(device_ids=[local] if name == "nccl" else None)
        yield _group_of_default(name)
        # and a last one: no rank tears the group down while a peer still sends to or receives from it
        # (gloo aborts the peer's process when its connection closes mid-transfer)
        dist.barrier(device_ids=[local] if name == "nccl" else None)
    finally:
        dist.destroy_process_group()


@dataclass(frozen=True)
class Plan:
    """Which changes a process holds each round and how they get there, for one neighbourhood matrix."""

    held: tuple[int, ...]  # sorted node ids whose Δθ this process holds: its own nodes and those they use
    own_at: int  # position of this process's first node in ``held`` (its nodes are contiguous there)
    sends: tuple[tuple[int, tuple[int, ...]], ...]  # (peer, own nodes whose changes go there)
    recvs: tuple[tuple[int, int, int], ...]  # (peer, first position in ``held``, count)
    node_rows: int  # changes received per round by all nodes together (j ∈ N(i), j ≠ i): one node per machine
    process_rows: int  # changes received per round by all processes together, this run's split


def plan(group: Group, needs: torch.Tensor) -> Plan:
    """The exchange for ``needs`` (n x n bool: node i uses Δθ_j), the same on every process."""
    needs = needs.cpu()
    n = needs.shape[0]
    uses = [needs[group.owned(n, r).start : group.owned(n, r).stop].any(dim=0) for r in range(group.world)]
    own = group.owned(n)
    mine = uses[group.rank].clone()
    mine[own.start : own.stop] = True
    held = tuple(torch.nonzero(mine).flatten().tolist())
    sends, recvs = [], []
    for peer in range(group.world):
        if peer == group.rank:
            continue
        theirs = group.owned(n, peer)
        out = tuple(j for j in own if uses[peer][j])
        if out:
            sends.append((peer, out))
        incoming = [pos for pos, j in enumerate(held) if j in theirs]
        if incoming:
            recvs.append((peer, incoming[0], len(incoming)))
    process_rows = 0
    for r in range(group.world):
        theirs = group.owned(n, r)
        foreign = uses[r].clone()
        foreign[theirs.start : theirs.stop] = False
        process_rows += int(foreign.sum())
    node_rows = int(needs.sum()) - int(needs.diagonal().sum())
    return Plan(held, held.index(own.start), tuple(sends), tuple(recvs), node_rows, process_rows)


def exchange(group: Group, plan: Plan, own_rows: torch.Tensor) -> torch.Tensor:
    """The changes of the nodes in ``plan.held``, one row each in that order; ``own_rows`` are this process's."""
    held = own_rows.new_empty((len(plan.held), own_rows.shape[1]))
    held[plan.own_at : plan.own_at + len(own_rows)] = own_rows
    if not plan.sends and not plan.recvs:
        return held
    start = plan.held[plan.own_at]
    ops, inbox = [], []
    for peer, nodes in plan.sends:
        rows = own_rows[torch.tensor([j - start for j in nodes], device=own_rows.device)].to(group.device)
        ops.append(dist.P2POp(dist.isend, rows.contiguous(), peer))
    for peer, at, count in plan.recvs:
        buffer = torch.empty((count, own_rows.shape[1]), dtype=own_rows.dtype, device=group.device)
        inbox.append((at, buffer))
        ops.append(dist.P2POp(dist.irecv, buffer, peer))
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    for at, buffer in inbox:
        held[at : at + len(buffer)] = buffer.to(held.device)
    return held
